// The Debian packages voxd's engines need, each with a file that shows it is installed. One list for
// scripts/setup.mjs (which installs what is missing) and the Dockerfile (whose apt-get line
// test/deploy/dockerfile.test.ts checks against it), so the image and a bare-metal install cannot drift.

/** What `npm start` needs: pocketsphinx (the library and its en-us model), espeak-ng's data for
 * Piper voices, ffmpeg, Festival and its HTS voice. */
export const RUNTIME_PACKAGES = {
  libpocketsphinx3: '/usr/lib/x86_64-linux-gnu/libpocketsphinx.so.3',
  'pocketsphinx-en-us': '/usr/share/pocketsphinx/model/en-us/en-us.lm.bin',
  // Piper voices phonemize with espeak-ng's data when their folder does not ship it.
  'espeak-ng-data': '/usr/lib/x86_64-linux-gnu/espeak-ng-data/phontab',
  // Audio formats other than WAV and PCM, in and out (mp3, opus, aac, flac, m4a, webm, ...).
  ffmpeg: '/usr/bin/ffmpeg',
  // Decompresses .tar.bz2 packages (src/models/unpack.ts pipes `bzip2 -dc` into node-tar).
  bzip2: '/usr/bin/bzip2',
  // The festival_tts engine and its one voice (HTS, US English, female).
  festival: '/usr/bin/festival',
  'festvox-us-slt-hts':
    '/usr/share/festival/voices/us/cmu_us_slt_arctic_hts/hts/cmu_us_slt_arctic_hts.htsvoice',
};

/** Only `npm test` (--for-tests) needs these: a server, and so the image, carries neither. */
export const TEST_PACKAGES = {
  // Headless Chromium for the browser tests (test/browser, driven by playwright-core, which downloads
  // no browser of its own): about 20 s to install, 11 packages, about 410 MB on disk.
  chromium: '/usr/bin/chromium',
  // The reverse proxy of the scale-out test (test/deploy/scale-out.test.ts); about 2 MB.
  nginx: '/usr/sbin/nginx',
  // Real recordings with reference transcripts (five LibriVox clips, 3.4 MB) for the pocketsphinx
  // history-independence tests and the WER measurement in docs/performance.md.
  'pocketsphinx-testdata': '/usr/share/pocketsphinx/test/data/librivox/transcription',
};
