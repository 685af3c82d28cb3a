#!/bin/sh
# Download (here, on Debian 12) the .deb files of the synthesizers (espeak-ng, flite, festival with its three English
# voices) and the codecs of the channel augmentation (lame, opus-tools), with every library they load, so that the
# GPU machine (Ubuntu 24.04, no package registry, none of these) can unpack them with unpack_synth_debs.sh.
#
#   tools/data/fetch_synth_debs.sh [DEST]          # DEST defaults to .debs (git-ignored) in the repo root
#   tools/data/fetch_synth_debs.sh --voices [DEST] # the contrib/non-free voices, into .debs-voices by default
#   tools/data/fetch_synth_debs.sh --rhvoice [DEST] # RHVoice (non-free), into .debs-rhvoice by default
#
# --voices: MBROLA (contrib) with its English voices us1, us2 and en1 (non-free; us3 is the test set's held-out
# voice and stays home) and SVOX Pico (non-free), from Debian 12's contrib and non-free sections through a private
# apt configuration (build-data/apt-voices), so the machine's own sources stay main-only. Its SHA256SUMS is named
# SHA256SUMS.voices, so both sets can lie in one folder for unpack_synth_debs.sh. Their licences: the mbrola program
# is AGPL-3; the MBROLA voices are free for non-commercial, non-military use (the models trained on them are ours
# to ship, the voices are not shipped); Pico's lingware is Apache-2.0 without its sources (hence non-free).
# --rhvoice: RHVoice with its six English voices (rhvoice, rhvoice-english: non-free, 36 MB, a call's carry of its
# own; SHA256SUMS.rhvoice). The program and the CMU ARCTIC voices (alan, bdl, clb, slt) are LGPL-2.1+,
# evgeniy-eng and lyubov CC BY-NC-ND 4.0 (as with MBROLA: heard in training, never shipped).
#
# The dependency closure comes from apt-cache; glibc and the compiler runtime (libc6, libgcc-s1, gcc-12-base)
# are left out on purpose: the target's own, newer ones must be used (a bookworm libc on LD_LIBRARY_PATH would
# break every program), and so is libstdc++6 (festival's C++ runtime: the target's newer one serves it).
# libelogind0 is only an alternative to libsystemd0. festival's package dependencies for running as a system
# service (adduser, alsa-utils, lsb-base, sgml-base and what they pull in: PAM, kmod, debconf) are left out: the
# synthesis never uses them. The rest is bundled even where the target has its own copy: it is only ever loaded by
# the synthesizers and codecs, through the wrappers that unpack writes.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
APT=
PKGS=
SUMS=SHA256SUMS
if [ "${1:-}" = --voices ] || [ "${1:-}" = --rhvoice ]; then
  if [ "$1" = --voices ]; then
    DEST=${2:-$ROOT/.debs-voices}
    # Only these packages and the libraries they load: espeak-ng, which drives mbrola, is in the main set.
    PKGS="mbrola mbrola-us1 mbrola-us2 mbrola-en1 libttspico-utils libttspico0 libttspico-data"
    SUMS=SHA256SUMS.voices
  else
    DEST=${2:-$ROOT/.debs-rhvoice}
    PKGS="rhvoice rhvoice-english librhvoice-core7 librhvoice-audio2"
    SUMS=SHA256SUMS.rhvoice
  fi
  state=$ROOT/build-data/apt-voices
  mkdir -p "$state/lists/partial" "$state/cache/archives/partial"
  # The updates and security suites too: a library the machine has updated must be found in the version it has.
  { echo "deb http://deb.debian.org/debian bookworm main contrib non-free"
    echo "deb http://deb.debian.org/debian bookworm-updates main contrib non-free"
    echo "deb http://deb.debian.org/debian-security bookworm-security main contrib non-free"; } > "$state/sources.list"
  APT="-o Dir::Etc::sourcelist=$state/sources.list -o Dir::Etc::sourceparts=- -o Dir::State::Lists=$state/lists
       -o Dir::Cache=$state/cache"
  apt-get $APT update >/dev/null
else
  DEST=${1:-$ROOT/.debs}
fi
MAIN_PKGS="espeak-ng libespeak-ng1 espeak-ng-data libpcaudio0 libsonic0 flite libflite1
           festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts lame opus-tools"
PKGS=${PKGS:-$MAIN_PKGS}
EXCLUDE='^(libc6|libgcc-s1|gcc-[0-9]+-base|libstdc\+\+6|libelogind0|debconf|cdebconf|dpkg|perl-base|adduser|alsa-utils|lsb-base|sgml-base|sysvinit-utils|passwd|init-system-helpers|install-info|kmod|libkmod2|libpam.*|tar|libdebian-installer4|libnewt0\.52|libslang2|libtextwrap1|libsemanage.*|libsepol2|libaudit.*|libcap-ng0)$'

first=${PKGS%% *}
if [ -z "$(apt-cache $APT policy "$first" 2>/dev/null | grep Candidate | grep -v none)" ]; then
  echo "apt-cache knows no $first: run 'apt-get update' first" >&2
  exit 1
fi
closure() {
  apt-cache $APT depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
    --no-enhances "$@" | grep -E '^[a-z0-9]' | sort -u | grep -vE "$EXCLUDE"
}
CLOSURE=$(closure $PKGS)
# rhvoice depends on rhvoice-language, which every language's voices provide: English only (34 of 284 MB).
CLOSURE=$(echo "$CLOSURE" | grep -vE '^rhvoice-' ; case " $PKGS " in *" rhvoice-english "*) echo rhvoice-english;; esac)
# The other sets leave out what the main set has (RHVoice shares 34 libraries, 7 MB of a call's carry, with it):
# they are unpacked in one folder with it.
[ "$PKGS" = "$MAIN_PKGS" ] || CLOSURE=$(echo "$CLOSURE" | grep -vxF -e "$(closure $MAIN_PKGS)")
mkdir -p "$DEST"
cd "$DEST"
rm -f ./*.deb "$SUMS"
# apt-get download as root warns that _apt cannot write here (it downloads unsandboxed): harmless.
apt-get $APT download $CLOSURE 2>&1 | grep -v -e '^W: Download is performed unsandboxed' -e '^Get:' || true
n=$(ls ./*.deb | wc -l)
want=$(echo "$CLOSURE" | wc -w)
if [ "$n" -ne "$want" ]; then
  echo "expected $want .deb files, got $n" >&2
  exit 1
fi
for f in ./*%3a*.deb; do  # epochs are written %3a in the names: keep the names plain
  [ -e "$f" ] && mv "$f" "$(echo "$f" | sed 's/%3a/_/')"
done
sha256sum ./*.deb > "$SUMS"
echo "$n packages, $(du -sh . | cut -f1) in $DEST:"
ls ./*.deb | sed 's|^\./|  |'
