/**
 * An idle server lets its main thread sleep. prom-client's event-loop delay histogram sampled every
 * 10 ms by default, a timer that woke the thread 100 times a second with nothing to do; on a machine
 * whose cores the engines' runners keep busy, every such wake-up takes a runner off its core
 * (issue 42, docs/performance.md). The wake-ups are the main thread's context switches (each sleep
 * in epoll_wait is one), read from /proc for a real `voxd serve` child over a window of idle time.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { EVENT_LOOP_SAMPLE_MS } from '../../src/observability/metrics.js';
import { configFolder, VoxdProcess } from '../helpers/cli.js';
import { request } from '../helpers/voxd.js';

/** The idle time measured: a rate over a window, not an ordering. */
const WINDOW_MS = 2000;
/** What an idle server may wake for in a second: the delay histogram's samples, and a margin for the rest. */
const MAX_WAKEUPS_PER_SECOND = 1000 / EVENT_LOOP_SAMPLE_MS + 10;

const folder = configFolder('voxd-idle-wakeups-');
let voxd: VoxdProcess;
let url: string;

before(async () => {
  const config = folder.write({
    ui: false,
    models: [{ id: 'asr', family: 'fixture', path: '.', task: 'asr' }],
  });
  voxd = new VoxdProcess(['serve', '--config', config, '--port', '0']);
  ({ url } = await voxd.listening());
});
after(async () => {
  await voxd?.stop();
});

/** The main thread's context switches so far (voluntary: it slept; nonvoluntary: it was preempted). */
function switches(pid: number): number {
  const status = readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8');
  const count = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)$`, 'm').exec(status)![1]);
  return count('voluntary_ctxt_switches') + count('nonvoluntary_ctxt_switches');
}

test('an idle server wakes its main thread a few times a second, not a hundred', async () => {
  // The metrics are served (the delay histogram is running) before the window starts.
  const metrics = await request(url, 'GET', '/metrics');
  assert.equal(metrics.status, 200);
  assert.match(metrics.body.toString(), /^nodejs_eventloop_lag_p99_seconds /m);
  const pid = voxd.child.pid!;
  const start = switches(pid);
  await delay(WINDOW_MS);
  const perSecond = ((switches(pid) - start) * 1000) / WINDOW_MS;
  assert.ok(
    perSecond <= MAX_WAKEUPS_PER_SECOND,
    `${perSecond} wake-ups a second, at most ${MAX_WAKEUPS_PER_SECOND} expected`,
  );
});
