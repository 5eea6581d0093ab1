# Spool — the two commands: `make run` and `make test`.
SWIFT ?= swift
SWIFT_FLAGS := --explicit-target-dependency-import-check error

# Installation: `make install` (builds, then copies), or `make build` as yourself and
# `sudo make install-files`, so root never writes in .build. DESTDIR stages a package.
PREFIX ?= /usr/local
DESTDIR ?=
BINARY ?= .build/release/spool
BINDIR := $(PREFIX)/bin
DATADIR := $(PREFIX)/share
SYSTEMD_USER_DIR := $(PREFIX)/lib/systemd/user
# Debian's zsh reads /usr/local/share/zsh/site-functions but, under /usr, only vendor-completions:
# a package built with PREFIX=/usr sets ZSH_COMPLETION_DIR=/usr/share/zsh/vendor-completions.
ZSH_COMPLETION_DIR ?= $(DATADIR)/zsh/site-functions
INSTALL ?= install

# Every installed file, as `make uninstall` removes them.
INSTALLED := \
	$(BINDIR)/spool \
	$(DATADIR)/dbus-1/services/org.mpris.MediaPlayer2.spool.service \
	$(SYSTEMD_USER_DIR)/spool.service \
	$(DATADIR)/applications/spool.desktop \
	$(DATADIR)/icons/hicolor/scalable/apps/spool.svg \
	$(DATADIR)/bash-completion/completions/spool \
	$(ZSH_COMPLETION_DIR)/_spool \
	$(DATADIR)/fish/vendor_completions.d/spool.fish \
	$(DATADIR)/man/man1/spool.1

.PHONY: run test stress build build-debug lint format deps deps-test clean install install-files uninstall

## make run: install what is missing, build in release mode, start the daemon.
run: deps build
	scripts/run-daemon.sh .build/release/spool

## make test: install what is missing, check the formatting, build, run every test.
test: deps-test lint
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	SWIFT=$(SWIFT) scripts/run-tests.sh $(SWIFT_FLAGS)

## make stress: `make test` with busy loops on half of the cores beside the suite, as a busy
## CI machine runs it; the gate before submitting a change to tests or timing.
stress: deps-test lint
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	SWIFT=$(SWIFT) scripts/stress-test $(SWIFT_FLAGS)

# The release build links the Swift runtime, Dispatch and FoundationEssentials statically:
# the daemon maps only the parts it uses (2.3 MiB less resident while playing, measured by
# bench/playback-cost.sh) and the installed binary needs no Swift runtime beside it.
# (A `swift build -c release` without the flag shares .build/release and recompiles it.)
RELEASE_FLAGS := -c release --static-swift-stdlib

build:
	$(SWIFT) build $(RELEASE_FLAGS) $(SWIFT_FLAGS)

# The code follows .swift-format (the toolchain's swift-format); `make format` applies it.
FORMATTED := Sources Tests bench Package.swift

lint:
	$(SWIFT) format lint --strict --recursive $(FORMATTED)

format:
	$(SWIFT) format --in-place --recursive $(FORMATTED)

build-debug:
	$(SWIFT) build $(SWIFT_FLAGS)

deps:
	scripts/install-deps.sh run

deps-test:
	scripts/install-deps.sh test

clean:
	rm -rf .build

## make install [PREFIX=/usr/local] [DESTDIR=]: build in release mode, then install-files.
install: build
	$(MAKE) install-files

# $(call generate,ARGUMENTS,FILE): writes what `$(BINARY) ARGUMENTS` prints to FILE (mode 0644),
# failing when the binary fails (a pipe into install would hide that).
generate = $(INSTALL) -d "$(dir $(2))" && "$(BINARY)" $(1) > "$(2)" && chmod 0644 "$(2)"

## make install-files [BINARY=.build/release/spool]: copy an already built binary and the
## D-Bus activation file, systemd user unit, desktop file, icon, shell completions and man
## page (the last two printed by the binary, from the definitions behind --help); build nothing.
install-files:
	@test -x "$(BINARY)" || { echo "no executable at $(BINARY): run 'make build' first" >&2; exit 1; }
	$(INSTALL) -D -m 0755 "$(BINARY)" "$(DESTDIR)$(BINDIR)/spool"
	sed '/^#/!s|@bindir@|$(BINDIR)|g' dbus/org.mpris.MediaPlayer2.spool.service.in \
		| $(INSTALL) -D -m 0644 /dev/stdin "$(DESTDIR)$(DATADIR)/dbus-1/services/org.mpris.MediaPlayer2.spool.service"
	sed '/^#/!s|@bindir@|$(BINDIR)|g' systemd/spool.service.in \
		| $(INSTALL) -D -m 0644 /dev/stdin "$(DESTDIR)$(SYSTEMD_USER_DIR)/spool.service"
	sed 's|^Exec=spool |Exec=$(BINDIR)/spool |' desktop/spool.desktop \
		| $(INSTALL) -D -m 0644 /dev/stdin "$(DESTDIR)$(DATADIR)/applications/spool.desktop"
	$(INSTALL) -D -m 0644 desktop/spool.svg "$(DESTDIR)$(DATADIR)/icons/hicolor/scalable/apps/spool.svg"
	$(call generate,completions bash,$(DESTDIR)$(DATADIR)/bash-completion/completions/spool)
	$(call generate,completions zsh,$(DESTDIR)$(ZSH_COMPLETION_DIR)/_spool)
	$(call generate,completions fish,$(DESTDIR)$(DATADIR)/fish/vendor_completions.d/spool.fish)
	$(call generate,manpage,$(DESTDIR)$(DATADIR)/man/man1/spool.1)

## make uninstall [PREFIX=/usr/local] [DESTDIR=]: remove exactly the files install-files wrote.
uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
