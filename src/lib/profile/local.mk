# profile: the runner above the stages (target -> capture -> ... -> deliver)
libflamekit_a_SOURCES += src/lib/profile/profile.h src/lib/profile/runner.c \
	src/lib/profile/kinds.h src/lib/profile/kinds.c src/lib/profile/metadata.c
