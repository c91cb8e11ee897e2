# swaplab: `make run` measures the quick matrix, `make test` tests the lab.
# Both install the Debian packages they need first (apt-get, as root).

PYTHON := /usr/bin/python3
LAB := $(PYTHON) -m lab
MATRIX ?= quick
PYTEST_ARGS ?=
# The stored run whose cells `make bench` breaks down and resamples.
BENCH_RUN ?= latest

# Host tools for building kernels, the guest and the lab itself, and the
# real programs the matrix's workloads bring into the guest (Redis:
# redis-tools has the server binary too, without the redis-server
# package's service, which would start on this host).
DEB_PACKAGES := linux-source-6.1 build-essential bc flex bison libelf-dev \
	libssl-dev cpio xz-utils git ccache qemu-system-x86 qemu-utils \
	busybox-static python3-yaml python3-pytest python3-pytest-xdist \
	python3-numpy python3-scipy python3-jinja2 python3-hypothesis \
	python3-matplotlib python3-mypy chromium poppler-utils nbdkit \
	nbdkit-plugin-dev ovmf redis-tools

.PHONY: all deps workloads build run test test-unit bench bench-cold clean help

all: help

help:
	@echo "make run        build, boot and measure the '$(MATRIX)' matrix, then report"
	@echo "make test       install what is needed and run every test"
	@echo "make test-unit  the fast unit tests only"
	@echo "make build      build the kernel variants of the '$(MATRIX)' matrix"
	@echo "make bench      print the lab's performance figures"
	@echo "make bench-cold the same, plus cold builds (quick variants; beyond-6.12)"
	@echo "make clean      remove build products in the repository"

deps:
	@missing=$$(for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | \
		grep -q ' installed$$' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" != 0 ]; then \
			echo "missing packages; as root run: apt-get install -y" $$missing; \
			exit 1; \
		fi; \
		echo "installing:" $$missing; \
		apt-get update -q >/dev/null && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			--no-install-recommends $$missing >/dev/null; \
	fi

workloads: deps
	$(MAKE) -C workloads
	$(MAKE) -C lab/devmodel

build: deps
	$(LAB) build --matrix $(MATRIX)

run: deps workloads
	$(LAB) run --matrix $(MATRIX)

# The slowest tests and fixtures are listed at the end: a cold run's
# kernel builds show there (CI must stay under 60 min).
# mypy first (pyproject.toml declares its strictness): seconds, and a
# type error is cheaper to read than the test it would fail.
test: deps workloads
	$(PYTHON) -m mypy
	$(PYTHON) -m pytest --durations=15 $(PYTEST_ARGS) tests

test-unit: deps
	$(PYTHON) -m mypy
	$(PYTHON) -m pytest -m "not slow" $(PYTEST_ARGS) tests

bench: deps workloads
	$(PYTHON) tests/bench/bench_build.py
	$(PYTHON) tests/bench/bench_cells.py --run $(BENCH_RUN)
	$(PYTHON) tests/bench/bench_answers.py --run $(BENCH_RUN)
	$(PYTHON) tests/bench/bench_swapbench.py
	$(PYTHON) tests/bench/bench_boot.py
	$(PYTHON) tests/bench/bench_devices.py

# The cold figure builds every quick variant from an empty cache: slow.
bench-cold: deps workloads
	$(PYTHON) tests/bench/bench_build.py --cold
	$(PYTHON) tests/bench/bench_swapbench.py
	$(PYTHON) tests/bench/bench_boot.py
	$(PYTHON) tests/bench/bench_devices.py

clean:
	$(MAKE) -C workloads clean
	$(MAKE) -C lab/devmodel clean
	find . -name __pycache__ -prune -exec rm -rf {} +
	rm -rf .pytest_cache
