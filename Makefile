# Spool — the two commands: `make run` and `make test`.
SWIFT ?= swift
SWIFT_FLAGS := --explicit-target-dependency-import-check error
PREFIX ?= /usr/local

.PHONY: run test build build-debug deps deps-test clean

## make run: install what is missing, build in release mode, start the daemon.
run: deps build
	scripts/run-daemon.sh .build/release/spool

## make test: install what is missing, build, run every test.
test: deps-test
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	$(SWIFT) test --skip-build $(SWIFT_FLAGS)

build:
	$(SWIFT) build -c release $(SWIFT_FLAGS)

build-debug:
	$(SWIFT) build $(SWIFT_FLAGS)

deps:
	scripts/install-deps.sh run

deps-test:
	scripts/install-deps.sh test

clean:
	rm -rf .build
