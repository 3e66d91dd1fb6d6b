# The two commands of the README, and the pieces they are made of.
BUILD ?= build
BUILD_TYPE ?= RelWithDebInfo

.PHONY: run test bench deps deps-run configure build build-skipprd python wheel docs format sanitize clean

# The sample needs only skipprd: its libraries, not the test servers, and not the test binaries.
run: build-skipprd
	$(BUILD)/skipprd sync --pipeline bikehire --once --log

test: build
	bash scripts/run-tests.sh $(BUILD)

bench: build
	bash bench/run.sh $(BUILD)

deps-run:
	bash scripts/install-deps.sh run

deps:
	bash scripts/install-deps.sh test

# Always run (cheap once configured): after `make run` it finds what `make test` installed since (GTest, pybind11).
configure:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

build-skipprd: deps-run
	$(MAKE) configure
	cmake --build $(BUILD) --target skipprd

build: deps
	$(MAKE) configure
	cmake --build $(BUILD)

# The Python module `skippr` into $(BUILD)/python (also part of `make build`).
python: deps
	$(MAKE) configure
	cmake --build $(BUILD) --target skippr_python

# The module as a wheel, for `pip install`: $(BUILD)/python/dist/skippr-<version>-cp311-cp311-linux_x86_64.whl,
# DuckDB's library inside it (python/build_wheel.py; offline, the standard library only).
wheel: python
	/usr/bin/python3 python/build_wheel.py --build-dir $(BUILD)

sanitize: deps
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSKIPPR_SANITIZE=ON
	cmake --build build-asan

# The parameter tables of docs/connectors/, from the binary's own connector specs.
docs: build
	python3 scripts/gen-connector-docs.py --binary $(BUILD)/skipprd

format:
	find src tests bench -name '*.cc' -o -name '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD) build-asan
