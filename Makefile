# The two commands of the README, and the pieces they are made of.
BUILD ?= build
BUILD_TYPE ?= RelWithDebInfo
CONFIG_STAMP := $(BUILD)/build.ninja

.PHONY: run test bench deps build format sanitize clean docs

run: build
	$(BUILD)/skipprd sync --pipeline bikehire --once --log

test: build
	bash scripts/run-tests.sh $(BUILD)

bench: build
	bash bench/run.sh $(BUILD)

deps:
	bash scripts/install-deps.sh

$(CONFIG_STAMP): | deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

build: deps $(CONFIG_STAMP)
	cmake --build $(BUILD)

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
