# subcommands: one file each
