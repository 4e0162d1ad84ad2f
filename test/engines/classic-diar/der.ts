/**
 * Diarization error rate, frame-level at 10 ms with no collar: (missed speech + false alarm +
 * speaker confusion) / reference speech, under the best one-to-one mapping of hypothesis speakers
 * onto reference speakers (every mapping is tried; test files have few speakers).
 */
export interface RefTurn {
  start: number;
  end: number;
  speaker: number;
}

export interface DerResult {
  der: number;
  miss: number;
  falseAlarm: number;
  confusion: number;
}

const FRAME = 160; // 10 ms at 16 kHz

function frames(turns: readonly RefTurn[], count: number): Int32Array {
  const out = new Int32Array(count).fill(-1);
  for (const t of turns)
    for (let f = Math.floor(t.start / FRAME); f < Math.min(count, Math.ceil(t.end / FRAME)); f++)
      out[f] = t.speaker;
  return out;
}

/** Every injective map from `from` into `to`, where a speaker may also stay unmapped (-1). */
function mappings(from: number[], to: number[]): Map<number, number>[] {
  if (from.length === 0) return [new Map()];
  const [head, ...rest] = from as [number, ...number[]];
  return mappings(rest, to).flatMap((tail) =>
    [...to.filter((r) => ![...tail.values()].includes(r)), -1].map((r) => new Map([...tail, [head, r]])),
  );
}

export function diarizationError(
  reference: readonly RefTurn[],
  hypothesis: readonly RefTurn[],
  samples: number,
): DerResult {
  const count = Math.ceil(samples / FRAME);
  const ref = frames(reference, count);
  const hyp = frames(hypothesis, count);
  const refSpeakers = [...new Set(ref)].filter((s) => s >= 0);
  const hypSpeakers = [...new Set(hyp)].filter((s) => s >= 0);
  const total = ref.filter((s) => s >= 0).length;
  let best: DerResult = { der: Infinity, miss: 0, falseAlarm: 0, confusion: 0 };
  for (const map of mappings(hypSpeakers, refSpeakers)) {
    let miss = 0;
    let falseAlarm = 0;
    let confusion = 0;
    for (let f = 0; f < count; f++) {
      const r = ref[f]!;
      const h = hyp[f]!;
      if (r >= 0 && h < 0) miss++;
      else if (r < 0 && h >= 0) falseAlarm++;
      else if (r >= 0 && map.get(h) !== r) confusion++;
    }
    const der = total > 0 ? (miss + falseAlarm + confusion) / total : falseAlarm > 0 ? Infinity : 0;
    if (der < best.der)
      best = { der, miss: miss / total, falseAlarm: falseAlarm / total, confusion: confusion / total };
  }
  return best;
}
