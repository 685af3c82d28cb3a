#!/bin/sh
# Unpack the espeak-ng/flite .deb files of fetch_synth_debs.sh into PREFIX with dpkg -x (no root, no apt), write
# wrappers PREFIX/bin/espeak-ng and PREFIX/bin/flite that set the library and data paths for themselves only, check
# that they run from PREFIX, and print the environment to use.
#
#   tools/data/unpack_synth_debs.sh [DEBDIR] [PREFIX]      # defaults: .debs in the repo root, /tmp/synth
#   export PATH=/tmp/synth/bin:$PATH                       # then espeak-ng and flite are the unpacked ones
#
# Made for Ubuntu 24.04 (glibc 2.39) with Debian 12 packages: glibc itself is not bundled, the host's is used.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DEBDIR=$(cd "${1:-$ROOT/.debs}" && pwd)
PREFIX=${2:-/tmp/synth}
command -v dpkg >/dev/null || { echo "dpkg not found" >&2; exit 1; }
if [ -f "$DEBDIR/SHA256SUMS" ]; then
  (cd "$DEBDIR" && sha256sum --quiet -c SHA256SUMS) || { echo "checksum mismatch in $DEBDIR" >&2; exit 1; }
fi
mkdir -p "$PREFIX"
PREFIX=$(cd "$PREFIX" && pwd)
n=0
for deb in "$DEBDIR"/*.deb; do
  dpkg -x "$deb" "$PREFIX"
  n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "no .deb files in $DEBDIR" >&2; exit 1; }

LIBS="$PREFIX/usr/lib/x86_64-linux-gnu:$PREFIX/lib/x86_64-linux-gnu:$PREFIX/usr/lib/x86_64-linux-gnu/pulseaudio"
DATA="$PREFIX/usr/lib/x86_64-linux-gnu"   # espeak-ng reads $ESPEAK_DATA_PATH/espeak-ng-data
mkdir -p "$PREFIX/bin"
# flite is optional: training needs only espeak-ng, and leaving libflite1 (13 MB) out keeps a GPU call's carry small.
progs=espeak-ng
[ -x "$PREFIX/usr/bin/flite" ] && progs="$progs flite"
for prog in $progs; do
  cat > "$PREFIX/bin/$prog" <<WRAP
#!/bin/sh
# written by tools/data/unpack_synth_debs.sh: run the unpacked $prog with its own libraries and data
LD_LIBRARY_PATH="$LIBS\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" ESPEAK_DATA_PATH="$DATA" exec "$PREFIX/usr/bin/$prog" "\$@"
WRAP
  chmod +x "$PREFIX/bin/$prog"
done

# self-test in a bare environment: the binaries, libraries and voice data must all come from PREFIX
fail() { echo "self-test failed: $*" >&2; exit 1; }
data_at=$(env -i PATH=/usr/bin:/bin "$PREFIX/bin/espeak-ng" --version | sed -n 's/.*Data at: //p')
[ "$data_at" = "$DATA/espeak-ng-data" ] || fail "espeak-ng reads its data from '$data_at', not $DATA/espeak-ng-data"
out=$(env -i PATH=/usr/bin:/bin LD_DEBUG=libs "$PREFIX/bin/espeak-ng" -v en-us+f2 --stdout "unpacked voice test" \
        2>"$PREFIX/.ld_debug" | head -c 4)
[ "$out" = "RIFF" ] || fail "espeak-ng did not write a WAV"
for lib in libespeak-ng.so.1 libpcaudio.so.0 libsonic.so.0 libpulse.so.0; do
  grep -q "calling init: $PREFIX/.*/$lib" "$PREFIX/.ld_debug" || fail "$lib was not loaded from $PREFIX"
done
if [ "$progs" != espeak-ng ]; then
  env -i PATH=/usr/bin:/bin "$PREFIX/bin/flite" -voice slt -t "unpacked voice test" -o "$PREFIX/.flite_test.wav" \
    || fail "flite did not run"
  [ "$(head -c 4 "$PREFIX/.flite_test.wav")" = "RIFF" ] || fail "flite did not write a WAV"
fi
rm -f "$PREFIX/.ld_debug" "$PREFIX/.flite_test.wav"

echo "unpacked $n packages into $PREFIX; $progs run from there (data: $DATA/espeak-ng-data)."
echo "Use the wrappers (they set the paths for espeak-ng/flite only, not for python or torch):"
echo "  export PATH=\"$PREFIX/bin:\$PATH\""
echo "or, equivalently, the raw environment for $PREFIX/usr/bin/espeak-ng and $PREFIX/usr/bin/flite:"
echo "  export LD_LIBRARY_PATH=\"$LIBS\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}\""
echo "  export ESPEAK_DATA_PATH=\"$DATA\"    # or: espeak-ng --path=$DATA"
echo "  export PATH=\"$PREFIX/usr/bin:\$PATH\""
