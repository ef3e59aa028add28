# share: SVG script/style (compiled in), completion, systemd
bashcompletiondir = $(datadir)/bash-completion/completions
dist_bashcompletion_DATA = share/bash-completion/flamekit
