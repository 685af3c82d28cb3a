#!/bin/sh
# Unpack the .deb files of fetch_synth_debs.sh into PREFIX with dpkg -x (no root, no apt), write wrappers
# PREFIX/bin/{espeak-ng,flite,festival,mbrola,pico2wave,RHVoice-test,lame,opusenc,opusdec} (those unpacked) that
# set the library and data paths for themselves only, check that they run from PREFIX, and print the environment
# to use. DEBDIR may hold all of fetch_synth_debs.sh's sets (each SHA256SUMS* in it is checked).
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
for sums in "$DEBDIR"/SHA256SUMS*; do
  [ -f "$sums" ] || continue
  (cd "$DEBDIR" && sha256sum --quiet -c "$(basename "$sums")") || { echo "checksum mismatch in $sums" >&2; exit 1; }
done
mkdir -p "$PREFIX"
PREFIX=$(cd "$PREFIX" && pwd)
n=0
for deb in "$DEBDIR"/*.deb; do
  dpkg -x "$deb" "$PREFIX"
  n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "no .deb files in $DEBDIR" >&2; exit 1; }

# Debian's festival names its voice, lexicon and language folders by absolute path in three of its Scheme files
# (not under --datadir): point them at PREFIX, or festival finds no voice where /usr/share/festival is missing.
for scm in voices.scm lexicons.scm languages.scm; do
  f="$PREFIX/usr/share/festival/$scm"
  [ -f "$f" ] && sed -i "s|\"/usr/share/festival/|\"$PREFIX/usr/share/festival/|g" "$f"
done

LIBS="$PREFIX/usr/lib/x86_64-linux-gnu:$PREFIX/lib/x86_64-linux-gnu:$PREFIX/usr/lib/x86_64-linux-gnu/pulseaudio"
DATA="$PREFIX/usr/lib/x86_64-linux-gnu"   # espeak-ng reads $ESPEAK_DATA_PATH/espeak-ng-data
mkdir -p "$PREFIX/bin"

# MBROLA's voices: espeak-ng looks for a voice file first in its own data folder (espeak-ng-data/mbrola/NAME), then
# under /usr/share/mbrola, and runs the `mbrola` program it finds on PATH (our wrapper, when PREFIX/bin is first).
if [ -x "$PREFIX/usr/bin/mbrola" ]; then
  mkdir -p "$DATA/espeak-ng-data/mbrola"
  for voice in "$PREFIX"/usr/share/mbrola/*/; do
    voice=${voice%/}
    name=$(basename "$voice")
    [ -f "$voice/$name" ] && ln -sfn "$voice/$name" "$DATA/espeak-ng-data/mbrola/$name"
  done
fi
# pico2wave reads its voices from /usr/share/pico/lang/ and nowhere else (compiled in, no option): where that
# folder is missing, point it at PREFIX's (the GPU machine runs as root); where it is there, it is the system's own.
if [ -x "$PREFIX/usr/bin/pico2wave" ] && [ ! -f /usr/share/pico/lang/en-US_ta.bin ]; then
  { [ ! -e /usr/share/pico ] && ln -s "$PREFIX/usr/share/pico" /usr/share/pico 2>/dev/null; } || {
    echo "pico2wave reads its voices from /usr/share/pico/lang only, which is missing and cannot be linked to" \
         "$PREFIX/usr/share/pico here (not root?)" >&2; exit 1; }
fi
# RHVoice reads its languages and voices from /usr/share/RHVoice only (compiled in, no option; its /etc/RHVoice
# configuration is optional): the same as for Pico.
if [ -x "$PREFIX/usr/bin/RHVoice-test" ] && [ ! -d /usr/share/RHVoice/voices/bdl ]; then
  { [ ! -e /usr/share/RHVoice ] && ln -s "$PREFIX/usr/share/RHVoice" /usr/share/RHVoice 2>/dev/null; } || {
    echo "RHVoice reads its voices from /usr/share/RHVoice only, which is missing and cannot be linked to" \
         "$PREFIX/usr/share/RHVoice here (not root?)" >&2; exit 1; }
fi
# Everything but espeak-ng is optional: a first-edition training run needs only espeak-ng, and leaving libflite1
# (13 MB) or festival's voices out keeps a GPU call's carry small.
progs=espeak-ng
for prog in flite festival mbrola pico2wave RHVoice-test lame opusenc opusdec; do
  [ -x "$PREFIX/usr/bin/$prog" ] && progs="$progs $prog"
done
for prog in $progs; do
  args=
  # festival reads init.scm, lexicons and voices under --datadir, its programs under --libdir (compiled in:
  # /usr/share/festival, /usr/lib/festival).
  [ "$prog" = festival ] && args="--libdir $PREFIX/usr/lib/festival --datadir $PREFIX/usr/share/festival "
  cat > "$PREFIX/bin/$prog" <<WRAP
#!/bin/sh
# written by tools/data/unpack_synth_debs.sh: run the unpacked $prog with its own libraries and data
LD_LIBRARY_PATH="$LIBS\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" ESPEAK_DATA_PATH="$DATA" exec "$PREFIX/usr/bin/$prog" $args"\$@"
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
case " $progs " in *" festival "*)
  for voice in kal_diphone ked_diphone cmu_us_slt_arctic_hts; do
    rm -f "$PREFIX/.festival_test.wav"
    printf '(voice_%s)\n(utt.save.wave (utt.synth (Utterance Text "unpacked voice test")) "%s" (quote riff))\n' \
      "$voice" "$PREFIX/.festival_test.wav" | env -i PATH=/usr/bin:/bin LD_DEBUG=libs "$PREFIX/bin/festival" --pipe \
      >/dev/null 2>"$PREFIX/.ld_debug" || fail "festival did not run"
    [ "$(head -c 4 "$PREFIX/.festival_test.wav" 2>/dev/null)" = "RIFF" ] || fail "festival's $voice wrote no WAV"
    grep -q "calling init: $PREFIX/.*/libestools.so" "$PREFIX/.ld_debug" || fail "libestools was not loaded from $PREFIX"
  done ;;
esac
case " $progs " in *" mbrola "*)
  # through espeak-ng, which runs the first mbrola on PATH: the wrapper
  for voice in "$DATA"/espeak-ng-data/mbrola/*; do
    out=$(env -i PATH="$PREFIX/bin:/usr/bin:/bin" "$PREFIX/bin/espeak-ng" -v "mb-$(basename "$voice")" --stdout \
            "unpacked voice test" | head -c 4)
    [ "$out" = "RIFF" ] || fail "espeak-ng with mbrola's $(basename "$voice") did not write a WAV"
  done ;;
esac
case " $progs " in *" pico2wave "*)
  for lang in en-US en-GB; do
    env -i PATH=/usr/bin:/bin "$PREFIX/bin/pico2wave" -l $lang -w "$PREFIX/.pico_test.wav" "unpacked voice test" \
      || fail "pico2wave $lang did not run"
    [ "$(head -c 4 "$PREFIX/.pico_test.wav")" = "RIFF" ] || fail "pico2wave $lang wrote no WAV"
  done ;;
esac
case " $progs " in *" RHVoice-test "*)
  # An unknown voice name speaks with the first voice instead, without an error: every voice must sound its own.
  for voice in alan bdl clb slt evgeniy-eng lyubov; do
    echo "unpacked voice test" | env -i PATH=/usr/bin:/bin "$PREFIX/bin/RHVoice-test" -p $voice \
      -o "$PREFIX/.rhvoice_$voice.wav" || fail "RHVoice-test $voice did not run"
    [ "$(head -c 4 "$PREFIX/.rhvoice_$voice.wav")" = "RIFF" ] || fail "RHVoice-test $voice wrote no WAV"
  done
  [ "$(md5sum "$PREFIX"/.rhvoice_*.wav | cut -d' ' -f1 | sort -u | wc -l)" -eq 6 ] || \
    fail "RHVoice's six English voices do not all sound different (a voice is missing)" ;;
esac
case " $progs " in *" lame "*)
  env -i PATH=/usr/bin:/bin "$PREFIX/bin/espeak-ng" -v en-us --stdout "codec test" > "$PREFIX/.codec_test.wav"
  env -i PATH=/usr/bin:/bin "$PREFIX/bin/lame" --quiet -b 32 "$PREFIX/.codec_test.wav" "$PREFIX/.codec_test.mp3" \
    || fail "lame did not encode"
  env -i PATH=/usr/bin:/bin "$PREFIX/bin/lame" --quiet --decode "$PREFIX/.codec_test.mp3" "$PREFIX/.codec_back.wav" \
    || fail "lame did not decode"
  env -i PATH=/usr/bin:/bin "$PREFIX/bin/opusenc" --quiet --bitrate 16 "$PREFIX/.codec_test.wav" \
    "$PREFIX/.codec_test.opus" || fail "opusenc did not encode"
  env -i PATH=/usr/bin:/bin "$PREFIX/bin/opusdec" --quiet --rate 16000 "$PREFIX/.codec_test.opus" \
    "$PREFIX/.codec_back.wav" || fail "opusdec did not decode" ;;
esac
rm -f "$PREFIX/.ld_debug" "$PREFIX/.flite_test.wav" "$PREFIX/.festival_test.wav" "$PREFIX/.pico_test.wav" \
  "$PREFIX"/.codec_* "$PREFIX"/.rhvoice_*

echo "unpacked $n packages into $PREFIX; $progs run from there (data: $DATA/espeak-ng-data)."
echo "Use the wrappers (they set the paths for the unpacked programs only, not for python or torch):"
echo "  export PATH=\"$PREFIX/bin:\$PATH\""
echo "or, equivalently, the raw environment for $PREFIX/usr/bin/espeak-ng and $PREFIX/usr/bin/flite:"
echo "  export LD_LIBRARY_PATH=\"$LIBS\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}\""
echo "  export ESPEAK_DATA_PATH=\"$DATA\"    # or: espeak-ng --path=$DATA"
echo "  export PATH=\"$PREFIX/usr/bin:\$PATH\""
