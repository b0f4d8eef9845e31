# Sourced by the bench scripts. A run copies the programs it uses into its output folder, so that later scripts
# (rescoring, halves, resumes) run the very code that measured; the copies must load the library they were built
# with too, or a rebuild in between pairs old programs with a new libnnmeter (a C++ ABI of 0.x: crashes).
# freeze_binaries BUILD_DIR DEST PROGRAM...: copy PROGRAMs (paths under BUILD_DIR) and libnnmeter into DEST.
# use_frozen DIR: load libnnmeter from DIR first (LD_LIBRARY_PATH precedes the build tree's RUNPATH; workers
# inherit it). Output folders made before the library was copied fall back to the build tree, as before.
# A resumed run keeps the copies it made first (DEST/.frozen), whatever the tree holds now: it was rebuilding and
# copying again, so a resume after any commit measured with other code than the run's first half.
freeze_binaries() {
  local build="$1" dest="$2"
  shift 2
  [ ! -f "$dest/.frozen" ] || return 0
  mkdir -p "$dest"
  local program
  for program in "$@"; do cp "$build/$program" "$dest/"; done
  cp -P "$build"/libnnmeter.so* "$dest/"
  touch "$dest/.frozen"
}
use_frozen() {
  export LD_LIBRARY_PATH="$1${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}
# frozen_nnmeter BUILD_DIR OUT: build nn-meter and its worker, run them from copies in OUT/bin (rebuilding the
# tree while a bench runs must not swap the binary under its workers) with OUT/home as NN_METER_HOME; sets $nnm.
frozen_nnmeter() {
  local build="$1" out="$2"
  cmake --build "$build" -j "$(nproc)" --target nn-meter nn-meter-worker >/dev/null
  freeze_binaries "$build" "$out/bin" nn-meter nn-meter-worker
  export NN_METER_HOME="$out/home"
  export NN_METER_WORKER="$out/bin/nn-meter-worker"
  use_frozen "$out/bin"
  nnm="$out/bin/nn-meter"
}
