# Two commands for a new user: `make demo` and `make test`. Both set up .venv on first use.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
export ROS_LOG_DIR ?= $(CURDIR)/build/ros_log
export AMENT_PREFIX_PATH := $(CURDIR)/$(VENV):$(AMENT_PREFIX_PATH)
export RMW_IMPLEMENTATION ?= rmw_fastrtps_cpp
export ROS_AUTOMATIC_DISCOVERY_RANGE ?= LOCALHOST

# The package is installed non-editable (data_files need it), so reinstall when sources change.
PKG_SOURCES := setup.py setup.cfg package.xml $(shell find snake_dynamics snake_ros snake_driver snake_viz snake_bringup launch urdf rviz config firmware -type f -not -path '*/__pycache__/*' -not -path '*/node_modules/*' -not -path 'firmware/build/*' 2>/dev/null)
# three.js and urdf-loader for the WebGL view, vendored from npm (installed with the package)
WEB := snake_viz/web
WEB_OK := $(WEB)/node_modules/.package-lock.json
REQS := requirements.txt requirements-ros.txt tools/bootstrap.sh tools/apt-available.sh tools/apt-packages.txt

.PHONY: demo test lint typecheck unit bench firmware web clean help
help:
	@echo "make demo   the crawling robot on an emulated table, identified and compensated (a few minutes; sets up .venv on first use)"
	@echo "make test   run the whole test suite: ruff, mypy, pytest"
	@echo "make unit   the quick loop: pytest without the ros, simavr, browser and slow tests"
	@echo "make bench  run the benchmarks (JSON to stdout and bench/results/)"

# A venv made for the other ROS source (PyPI wheels, or a sourced system ROS 2) is set up anew.
ROS_MODE := $(if $(ROS_DISTRO),system-ros-$(ROS_DISTRO),pypi-ros)
ifneq ($(wildcard $(VENV)/.ros-mode),)
ifneq ($(shell cat $(VENV)/.ros-mode),$(ROS_MODE))
.PHONY: $(VENV)/.runtime-ok
endif
endif
$(VENV)/.runtime-ok: $(REQS)
	tools/bootstrap.sh
	touch $@
$(VENV)/.dev-ok: $(VENV)/.runtime-ok requirements-dev.txt tools/apt-packages-test.txt
	tools/bootstrap.sh --dev
	touch $@
$(WEB_OK): $(WEB)/package.json $(WEB)/package-lock.json
	@command -v npm >/dev/null || { echo "npm is missing: apt-get install npm (the web view needs it)"; exit 1; }
	npm ci --prefix $(WEB) --no-audit --no-fund
	touch $@
web: $(VENV)/.pkg-ok

$(VENV)/.pkg-ok: $(VENV)/.runtime-ok $(WEB_OK) $(PKG_SOURCES)
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation --force-reinstall .
	@echo "compiling the numba kernels once (cached for every later process)"
	cd /tmp && $(CURDIR)/$(BIN)/python -c "from snake_dynamics.sim.engines import warm_up; warm_up()"
	@echo "and once for the checkout, which the tests import (numba caches beside the source)"
	$(BIN)/python -c "from snake_dynamics.sim.engines import warm_up; warm_up()"
	touch $@

demo: $(VENV)/.pkg-ok
	$(BIN)/snake demo --tour --duration 15

lint: $(VENV)/.dev-ok
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# tools/wifi_*.py too: the two-host tests import them, and they run as root beside the robot
typecheck: $(VENV)/.dev-ok
	$(BIN)/mypy --strict snake_dynamics snake_ros snake_driver snake_viz snake_bringup $(wildcard tools/wifi_*.py)

# The markers (pyproject.toml) say what a test needs. The quick loop leaves out the tests that
# need ROS, the firmware, a browser or long runs, and blocks rclpy, make, avr-gcc, simavr and
# chromium meanwhile (test/conftest.py): a test that lacks its marker fails there. It runs on
# every core (pytest-xdist).
unit: $(VENV)/.dev-ok $(VENV)/.pkg-ok
	$(BIN)/python -m pytest -n auto --dist worksteal -m "not ros and not simavr and not browser and not slow"

# make test runs in three parts: the tests that need no ROS graph, firmware or browser on both
# cores (their results do not depend on timing); the live ones marked parallel (they assert
# no timing and share no port, file or build with another module) on both cores, a module to
# a core; then the other live ones one at a time, so that no emulated robot shares the
# machine with another test.
QUICK := not ros and not simavr and not browser

# Python writes its bytecode caches here even where the environment says not to
# (PYTHONDONTWRITEBYTECODE): otherwise each of the seven pytest processes rewrites every test
# module's assertions again and each node process a test starts compiles the checkout anew.
test: export PYTHONDONTWRITEBYTECODE :=
test: lint typecheck $(VENV)/.pkg-ok
	$(BIN)/python -m pytest -n 2 --dist worksteal -m "$(QUICK)" --durations=10
	$(BIN)/python -m pytest -n 2 --dist loadfile -m "not ($(QUICK)) and parallel" --durations=10
	$(BIN)/python -m pytest -m "not ($(QUICK)) and not parallel" --durations=20

bench: $(VENV)/.dev-ok $(VENV)/.pkg-ok
	$(BIN)/python bench/dynamics.py
	$(BIN)/python bench/realtime.py --output bench/results/realtime.json
	$(BIN)/python bench/driver.py
	$(BIN)/python bench/shutdown.py --load 1 --output bench/results/shutdown.json
	$(BIN)/python bench/startup.py --output bench/results/startup.json
	$(BIN)/python bench/identify.py --output bench/results/identify.json
	$(BIN)/python bench/replay.py --load 1 --output bench/results/replay.json
	$(BIN)/python bench/locomotion.py --output bench/results/locomotion.json

firmware:
	$(MAKE) -C firmware

clean:
	rm -rf build install log $(VENV) .mypy_cache .pytest_cache .ruff_cache $(WEB)/node_modules
	$(MAKE) -C firmware clean
