# Shared by scripts/install and scripts/bench, so that the benchmark measures exactly what is
# installed. `build_release_binaries` leaves tokend, tokenctl and docker-credential-tokend side by
# side in `release_bin_dir`.
# Each build has its scratch directory: different flags in one .build would rebuild every shared
# module whenever the other binary is built.

# tokenctl runs thousands of times in shell loops, so it is a fully static executable: no dynamic
# loader and no shared Swift runtime to map and relocate (~2 ms a call). It links
# FoundationEssentials only, never full Foundation and its ICU data.
TOKENCTL_SCRATCH=.build-static
# tokend links the Swift runtime and Foundation in (libsecret and GLib stay shared): it maps only
# the pages it uses instead of whole shared libraries; idle with one account, 34 MB resident
# against 38 MB linked dynamically (Benchmarks/results/2026-11-23T1443Z-profile.md).
# Its own name since the flags became tokend_build_flags': SwiftPM does not rebuild a module whose
# -Xswiftc flags changed, so the old directory would have kept objects without function sections.
TOKEND_SCRATCH=.build-tokend
RELEASE_BIN_DIR=.build-release-bin

# tokend's compiler and linker flags, shared by everything built in its scratch directory.
# Each function in a section of its own, linked by lld in the order of
# scripts/lib/tokend-order.txt (Benchmarks/support/tokend_order.sh: what serving runs, the most run
# first): the code a load runs then lies on ~3 MB of pages instead of spreading, with the kernel's
# 64 KiB fault-around, over ~6 MB of a 47 MB text (issue 47, "RSS right after a minute of 64
# persistent clients"). lld's --gc-sections then also drops the functions nothing calls.
# The list's second part, the zero-initialised variables serving writes, puts the .bss pages it
# dirties together: ~270 KB less anonymous memory at rest (docs/architecture.md, "Memory at idle").
tokend_build_flags() {
  printf '%s\n' --static-swift-stdlib -Xswiftc -Xfrontend -Xswiftc -function-sections \
    -Xcc -ffunction-sections -Xswiftc -use-ld=lld
  # Absent in a tree from before it (bench --against): that tree links in its own order.
  if [ -f "$PWD/scripts/lib/tokend-order.txt" ]; then
    printf '%s\n' -Xlinker --symbol-ordering-file="$PWD/scripts/lib/tokend-order.txt" -Xlinker --no-warn-symbol-ordering
  fi
}

# tokend's release build in the current directory; prints the (unstripped) binary's path.
# scripts/bench --against also runs it in another tree, to measure that tree's daemon beside ours.
build_release_tokend() {
  local flags binary
  mapfile -t flags < <(tokend_build_flags)
  binary=$(swift build -c release --scratch-path "$TOKEND_SCRATCH" --show-bin-path)/tokend
  # SwiftPM does not know the order file is an input: an older binary is linked again.
  if [ -f "$binary" ] && [ scripts/lib/tokend-order.txt -nt "$binary" ]; then rm -f "$binary"; fi
  swift build -c release --scratch-path "$TOKEND_SCRATCH" --product tokend "${flags[@]}" >&2
  echo "$binary"
}

build_release_binaries() {
  local tokend
  tokend=$(build_release_tokend)
  # The credential helper shares tokenctl's modules and flags: container tools start it per pull.
  # lld lays out first what `tokenctl token ACCOUNT` touches, in the order it touches it
  # (tokenctl-order.txt, from Benchmarks/support/tokenctl_order.py): the process faults in 88
  # pages instead of 133, at ~4 µs a fault here the larger part of its gap to a C client (issue
  # 47). A name the code no longer has is skipped, so a stale list costs speed, never a build.
  for product in tokenctl docker-credential-tokend; do
    swift build -c release --scratch-path "$TOKENCTL_SCRATCH" --product "$product" \
      --static-swift-stdlib -Xswiftc -static-executable -Xswiftc -use-ld=lld \
      -Xlinker --symbol-ordering-file="$PWD/scripts/lib/tokenctl-order.txt" -Xlinker --no-warn-symbol-ordering
  done
  install -d "$RELEASE_BIN_DIR"
  local client_bin
  client_bin=$(swift build -c release --scratch-path "$TOKENCTL_SCRATCH" --show-bin-path)
  # Stripped (-s), as Debian policy 10.1 wants what the package ships, and so also what
  # scripts/install ships: tokend is 87 MB instead of 178 MB, nothing that runs changes (the
  # symbols are never mapped), and the scratch directories keep the unstripped binaries of the
  # same build (same build ID) to read a crash's addresses against.
  install -s -m 0755 "$tokend" "$client_bin/tokenctl" "$client_bin/docker-credential-tokend" "$RELEASE_BIN_DIR/"
}

# The fake Firebase for benchmarks, built with tokend's flags so that it shares tokend's modules.
build_release_fake() {
  local flags
  mapfile -t flags < <(tokend_build_flags)
  swift build -c release --scratch-path "$TOKEND_SCRATCH" --product tokend-fake-firebase "${flags[@]}" >&2
  echo "$(swift build -c release --scratch-path "$TOKEND_SCRATCH" --show-bin-path)/tokend-fake-firebase"
}

release_bin_dir() { echo "$PWD/$RELEASE_BIN_DIR"; }
