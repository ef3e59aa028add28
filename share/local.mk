# share: data files: the SVG script and style and the serve page (compiled
# in), bash completion, systemd units
bashcompletiondir = $(datadir)/bash-completion/completions
dist_bashcompletion_DATA = share/bash-completion/flamekit
# The units go to --with-systemdsystemunitdir (default: next to the example
# environment file, for the admin to copy; see flamekit-upload(1)).
dist_systemdsystemunit_DATA = share/systemd/flamekit-host-profile.service
dist_systemdsystemunit_DATA += share/systemd/flamekit-host-profile.timer
fkexampledir = $(datadir)/flamekit/systemd
dist_fkexample_DATA = share/systemd/upload.env.example
dist_systemdsystemunit_DATA += share/systemd/flamekit-serve.service
