// Preloaded into the server by `bench-main-thread.mjs --profile` (node --import): runs V8's
// sampling profiler on the main thread from the start, and on SIGUSR2 writes the profile to
// $VOXD_PROFILE_OUT. The server's own exit cannot write it: it ends with a hard exit
// (src/util/hard-exit.ts), which --cpu-prof does not survive.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

const session = new Session();
session.connect();
const post = (method, params) =>
  new Promise((resolve, reject) =>
    session.post(method, params, (err, result) => (err ? reject(err) : resolve(result))),
  );
await post('Profiler.enable');
await post('Profiler.setSamplingInterval', { interval: Number(process.env.PROFILE_INTERVAL_US ?? 100) });
await post('Profiler.start');
process.on('SIGUSR2', async () => {
  const { profile } = await post('Profiler.stop');
  writeFileSync(process.env.VOXD_PROFILE_OUT, JSON.stringify(profile));
});
