# share: SVG script/style (compiled in), completion, systemd
bashcompletiondir = $(datadir)/bash-completion/completions
dist_bashcompletion_DATA = share/bash-completion/flamekit
fksystemddir = $(datadir)/flamekit/systemd
dist_fksystemd_DATA = share/systemd/flamekit-host-profile.service share/systemd/flamekit-host-profile.timer share/systemd/upload.env.example
