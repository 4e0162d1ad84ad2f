/**
 * Average-link agglomerative clustering on cosine similarity. Inputs are L2-normalised embeddings
 * in time order. Merging stops at `numSpeakers` clusters when that is known, else when the best
 * average similarity between two clusters falls below `threshold`. The cluster-to-cluster
 * similarities are kept in a matrix updated by the Lance-Williams rule for average linkage (the
 * size-weighted mean of the two merged rows), which equals the mean of all pairwise similarities.
 */
export interface ClusterOptions {
  /** Stop at this many clusters (fewer only when there are fewer items). */
  numSpeakers?: number;
  /** Without numSpeakers: merge while the best average similarity is at least this. */
  threshold: number;
}

export interface Clustering {
  /** Cluster of each item, numbered 0.. in order of first appearance. */
  labels: number[];
  /** Cosine similarity of each item to its cluster's mean direction, clamped to [0, 1]. */
  confidence: number[];
  clusters: number;
}

export function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[i]!;
  return sum;
}

export function cluster(embeddings: readonly Float32Array[], options: ClusterOptions): Clustering {
  const n = embeddings.length;
  if (n === 0) return { labels: [], confidence: [], clusters: 0 };
  const sim = new Float64Array(n * n);
  for (let i = 0; i < n; i++)
    for (let j = i + 1; j < n; j++) {
      const s = dot(embeddings[i]!, embeddings[j]!);
      sim[i * n + j] = s;
      sim[j * n + i] = s;
    }
  const size = new Array<number>(n).fill(1);
  const owner = Array.from({ length: n }, (_, i) => i);
  const alive = new Array<boolean>(n).fill(true);
  let count = n;
  const target = options.numSpeakers;
  while (count > 1 && (target === undefined || count > target)) {
    let best = -Infinity;
    let bi = -1;
    let bj = -1;
    for (let i = 0; i < n; i++) {
      if (!alive[i]) continue;
      for (let j = i + 1; j < n; j++) {
        if (alive[j] && sim[i * n + j]! > best) {
          best = sim[i * n + j]!;
          bi = i;
          bj = j;
        }
      }
    }
    if (target === undefined && best < options.threshold) break;
    // Merge bj into bi.
    const wi = size[bi]!;
    const wj = size[bj]!;
    for (let k = 0; k < n; k++) {
      if (!alive[k] || k === bi || k === bj) continue;
      const s = (wi * sim[bi * n + k]! + wj * sim[bj * n + k]!) / (wi + wj);
      sim[bi * n + k] = s;
      sim[k * n + bi] = s;
    }
    size[bi] = wi + wj;
    alive[bj] = false;
    for (let k = 0; k < n; k++) if (owner[k] === bj) owner[k] = bi;
    count--;
  }

  const number = new Map<number, number>();
  const labels = owner.map((root) => {
    let label = number.get(root);
    if (label === undefined) {
      label = number.size;
      number.set(root, label);
    }
    return label;
  });
  const centroids = centroidsOf(embeddings, labels, number.size);
  const confidence = embeddings.map((e, i) => clampSimilarity(dot(e, centroids[labels[i]!]!)));
  return { labels, confidence, clusters: number.size };
}

/** A similarity as a confidence: clamped to [0, 1], three decimals. */
export function clampSimilarity(similarity: number): number {
  return Math.min(1, Math.max(0, Math.round(similarity * 1000) / 1000));
}

/** The unit-length mean direction of each cluster's members. */
export function centroidsOf(
  embeddings: readonly Float32Array[],
  labels: readonly number[],
  clusters: number,
): Float32Array[] {
  const dim = embeddings[0]?.length ?? 0;
  const centroids = Array.from({ length: clusters }, () => new Float32Array(dim));
  embeddings.forEach((e, i) => {
    const c = centroids[labels[i]!]!;
    for (let d = 0; d < dim; d++) c[d] = c[d]! + e[d]!;
  });
  for (const c of centroids) {
    const norm = Math.sqrt(dot(c, c)) || 1;
    for (let d = 0; d < dim; d++) c[d] = c[d]! / norm;
  }
  return centroids;
}

/** The most similar centroid to `embedding` and that similarity. */
export function nearest(
  embedding: Float32Array,
  centroids: readonly Float32Array[],
): { label: number; similarity: number } {
  let label = 0;
  let similarity = -Infinity;
  centroids.forEach((c, i) => {
    const s = dot(embedding, c);
    if (s > similarity) {
      similarity = s;
      label = i;
    }
  });
  return { label, similarity };
}
