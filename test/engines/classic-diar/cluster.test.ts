import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { cluster } from '../../../src/engines/classic-diar/cluster.js';
import { diarizationError } from './der.js';

/** A unit vector at `degrees` in the plane of axes `a` and `b` of an 8-dim space. */
function unit(degrees: number, a = 0, b = 1): Float32Array {
  const v = new Float32Array(8);
  v[a] = Math.cos((degrees * Math.PI) / 180);
  v[b] = Math.sin((degrees * Math.PI) / 180);
  return v;
}

/** Three tight groups on orthogonal axes (within similarity > 0.98, between 0), interleaved in time. */
const groups = [
  unit(0, 0, 1),
  unit(0, 2, 3),
  unit(5, 0, 1),
  unit(0, 4, 5),
  unit(8, 2, 3),
  unit(-6, 4, 5),
  unit(-5, 0, 1),
];
const truth = [0, 1, 0, 2, 1, 2, 0];

describe('classic_diar clustering', () => {
  test('no embeddings, no clusters', () => {
    assert.deepEqual(cluster([], { threshold: 0.72 }), { labels: [], confidence: [], clusters: 0 });
  });

  test('with the speaker count known it stops at exactly k clusters, numbered by first appearance', () => {
    const three = cluster(groups, { numSpeakers: 3, threshold: 0.99 });
    assert.deepEqual(three.labels, truth);
    assert.equal(three.clusters, 3);
    // k = 2: the two closest clusters merge, whatever the threshold says.
    assert.equal(cluster(groups, { numSpeakers: 2, threshold: 0.99 }).clusters, 2);
    assert.deepEqual(cluster(groups, { numSpeakers: 1, threshold: 0.99 }).labels, [0, 0, 0, 0, 0, 0, 0]);
    // More speakers than items: every item alone.
    assert.deepEqual(cluster(groups.slice(0, 3), { numSpeakers: 5, threshold: 0 }).labels, [0, 1, 2]);
  });

  test('with the count unknown it stops when the best average similarity falls below the threshold', () => {
    assert.deepEqual(cluster(groups, { threshold: 0.72 }).labels, truth);
    assert.equal(cluster(groups, { threshold: -1 }).clusters, 1);
    assert.equal(cluster(groups, { threshold: 0.9999 }).clusters, 7);
  });

  test('linkage is the average: a chain whose ends differ is not merged through its middle', () => {
    // 0° and 38° are similar (0.79), 38° and 80° too (0.74), but 0° and 80° are not (0.17): the
    // average from {0°, 38°} to 80° is 0.46, below 0.72; single linkage would have merged all three.
    const chain = [unit(0), unit(38), unit(80)];
    const result = cluster(chain, { threshold: 0.72 });
    assert.equal(result.clusters, 2);
    assert.equal(result.labels[0], result.labels[1]);
    assert.notEqual(result.labels[1], result.labels[2]);
  });

  test('identical embeddings form one cluster with full confidence', () => {
    const same = Array.from({ length: 6 }, () => unit(30, 2, 5));
    const result = cluster(same, { threshold: 0.72 });
    assert.deepEqual(result.labels, [0, 0, 0, 0, 0, 0]);
    assert.deepEqual(result.confidence, [1, 1, 1, 1, 1, 1]);
  });
});

describe('the DER measure used by the quality tests', () => {
  const ref = [
    { start: 0, end: 16000, speaker: 0 },
    { start: 24000, end: 40000, speaker: 1 },
  ];
  test('a perfect hypothesis scores 0 whatever its speaker numbers', () => {
    assert.equal(diarizationError(ref, ref, 48000).der, 0);
    const swapped = ref.map((t) => ({ ...t, speaker: 1 - t.speaker }));
    assert.equal(diarizationError(ref, swapped, 48000).der, 0);
  });
  test('miss, false alarm and confusion each count against reference speech', () => {
    const oneSpeaker = ref.map((t) => ({ ...t, speaker: 0 }));
    assert.equal(diarizationError(ref, oneSpeaker, 48000).confusion, 0.5);
    assert.equal(diarizationError(ref, [], 48000).miss, 1);
    const wide = [{ start: 0, end: 24000, speaker: 0 }, ref[1]!];
    assert.equal(diarizationError(ref, wide, 48000).falseAlarm, 0.25);
  });
});
