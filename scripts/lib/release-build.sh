# Shared by scripts/install and scripts/bench, so that the benchmark measures exactly what is
# installed. `build_release_binaries` leaves tokend and tokenctl side by side in `release_bin_dir`.

# tokenctl runs thousands of times in shell loops, so it is a fully static executable: no dynamic
# loader and no shared Swift runtime to map and relocate (~2 ms a call). It links
# FoundationEssentials only, never full Foundation and its ICU data. Its flags differ from
# tokend's, so it builds in a scratch directory of its own: sharing .build would rebuild every
# common module each time one of the two is built.
TOKENCTL_SCRATCH=.build-static
RELEASE_BIN_DIR=.build-release-bin

build_release_binaries() {
  swift build -c release --product tokend
  swift build -c release --scratch-path "$TOKENCTL_SCRATCH" --product tokenctl \
    --static-swift-stdlib -Xswiftc -static-executable
  install -d "$RELEASE_BIN_DIR"
  install -m 0755 "$(swift build -c release --show-bin-path)/tokend" \
    "$(swift build -c release --scratch-path "$TOKENCTL_SCRATCH" --show-bin-path)/tokenctl" \
    "$RELEASE_BIN_DIR/"
}

release_bin_dir() { echo "$PWD/$RELEASE_BIN_DIR"; }
