/**
 * The status feed serialises the model list once per tick for every status stream: its readers
 * share one string and one encoded frame, read again only at a tick or when a stream joins.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StatusFeed } from '../../../src/http/transport/status-feed.js';

test('one read per tick for all subscribers; the same string and frame while nothing changed', async () => {
  let reads = 0;
  let state = 'a';
  const feed = new StatusFeed(() => {
    reads++;
    return JSON.stringify({ state });
  }, 5);
  const signal = new AbortController().signal;
  // The feed's timer does not hold the process open (a server's streams do): this test's does.
  const alive = setInterval(() => {}, 1000);
  const leave = [feed.subscribe(), feed.subscribe(), feed.subscribe()];
  // Each stream's first event is the state as it joins.
  assert.equal(reads, 3);
  const json = feed.json;
  const frame = feed.frame;
  assert.equal(frame.toString(), `data: ${json}\n\n`);
  await feed.next(signal);
  await feed.next(signal);
  // Two ticks, one read each, whatever the number of streams.
  assert.equal(reads, 5);
  assert.ok(feed.json === json && feed.frame === frame, 'unchanged: the very same string and bytes');
  state = 'b';
  await feed.next(signal);
  assert.equal(feed.json, '{"state":"b"}');
  assert.equal(feed.frame.toString(), 'data: {"state":"b"}\n\n');
  for (const l of leave) l();
  // With nobody subscribed the ticks stop: an aborted wait resolves at once, and nothing is read.
  const before = reads;
  const stop = new AbortController();
  stop.abort();
  await feed.next(stop.signal);
  assert.equal(reads, before);
  clearInterval(alive);
});
