# SPDX-License-Identifier: BSD-3-Clause
# Thin wrapper over CMake. `make` installs missing Debian packages and builds; `make test` also
# runs the whole suite (unit + integration); `make demo` runs the twemproxy vs cluster comparison.
BUILD      ?= build
CMAKE_ARGS ?=
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
# Tests at a time: two per core. Most of a test's time is its servers' own timers: on 2 cores 4
# at a time ran the suite in 194 s (71% busy), against about 350 s at one per core.
TEST_JOBS  ?= $(shell echo $$(( $(JOBS) * 2 )))

.PHONY: all deps build test unit integration demo soak clean format format-check

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) $(CMAKE_ARGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# Ends with the 10 slowest tests (scripts/slowest-tests.sh); a failed test still fails the target.
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(TEST_JOBS); rc=$$?; \
	    bash $(CURDIR)/scripts/slowest-tests.sh . 10; exit $$rc

unit: build
	cd $(BUILD) && ctest --output-on-failure -j $(TEST_JOBS) -L unit

integration: build
	cd $(BUILD) && ctest --output-on-failure -j $(TEST_JOBS) -L integration

# DEMO_ARGS: extra compare flags, e.g. `make demo DEMO_ARGS=--full` or `DEMO_ARGS="--repeat 5"`.
# compare prints the table and the report's path itself; a failed run fails the target.
DEMO_ARGS  ?=
demo: build
	$(BUILD)/clusterpipe compare --out results/demo $(DEMO_ARGS)
	@echo "demo: open results/demo/report.md (table: results/demo/table.md, charts: results/demo/*.png)"

# bench/soak.sh for SOAK_MINUTES (default 2): memory through resharding, failovers and a kill.
# Not in `make test`: its 2 minutes and a cluster's start do not fit beside the suite, which
# already takes about 250 s on CI's 2 cores (the whole CI, about 880 s, is kept under 15
# minutes). Fails when RSS or the library's live bytes grow.
SOAK_MINUTES ?= 2
soak: build
	bash bench/soak.sh $(SOAK_MINUTES)

format:
	clang-format -i $$(find src include tests examples -name '*.[ch]')

format-check:
	clang-format --dry-run -Werror $$(find src include tests examples -name '*.[ch]')

clean:
	rm -rf $(BUILD)
