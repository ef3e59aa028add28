# share: SVG script/style (compiled in), completion, systemd
