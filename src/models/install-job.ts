/**
 * An install job's object (audio.cpp's shape) and the only edges its state may take, as
 * src/runtime/model-state.ts has them for a model: every change of state goes through moveJob.
 */
import { ERROR_CODES, isVoxdError } from '../errors.js';

export type JobState = 'idle' | 'queued' | 'running' | 'cancelling' | 'cancelled' | 'complete' | 'failed';

/** audio.cpp's install job object. Times are ms since the epoch, 0 while not reached. */
export interface InstallJob {
  id: string;
  state: JobState;
  message: string;
  /** null until the job ends; then 0 complete, 1 failed, 2 cancelled. */
  exit_code: number | null;
  /** A failed job's error code (`host_unreachable`, `download_failed`, ...), as an HTTP error names it; else null. */
  error_code: string | null;
  downloaded_bytes: number;
  total_bytes: number;
  /** -1 while the total is unknown, 0 queued or not started, 100 complete. */
  progress_percent: number;
  started_at_ms: number;
  finished_at_ms: number;
  /** Whether the ended job left partial files (a stopped or failed download kept for a resume). */
  partial_files: boolean;
}

/**
 * `idle` is the synthetic job of an id that has none, never a real job's state. A job fails in its
 * first step (an id already installed) before it runs; a stop makes it `cancelling` first, a
 * shutdown aborts it directly; a stop that comes once the package is published still completes.
 */
const EDGES: Record<JobState, readonly JobState[]> = {
  idle: [],
  queued: ['running', 'cancelling', 'cancelled', 'failed'],
  running: ['cancelling', 'cancelled', 'complete', 'failed'],
  cancelling: ['cancelled', 'complete', 'failed'],
  cancelled: [],
  complete: [],
  failed: [],
};

export const ACTIVE_JOB_STATES: ReadonlySet<JobState> = new Set(['queued', 'running', 'cancelling']);

export function canMoveJob(from: JobState, to: JobState): boolean {
  return EDGES[from].includes(to);
}

/** Moves `job` to `to`; an edge the table does not have is voxd's bug, refused loudly. */
export function moveJob(job: InstallJob, to: JobState): void {
  if (!canMoveJob(job.state, to))
    throw new Error(`install job ${job.id}: no transition from ${job.state} to ${to}`);
  job.state = to;
}

/** A job that has not moved yet: nothing downloaded, not finished. */
export function newJob(
  id: string,
  state: 'idle' | 'queued',
  message: string,
  startedAtMs: number,
): InstallJob {
  return {
    id,
    state,
    message,
    exit_code: null,
    error_code: null,
    downloaded_bytes: 0,
    total_bytes: 0,
    progress_percent: 0,
    started_at_ms: startedAtMs,
    finished_at_ms: 0,
    partial_files: false,
  };
}

/** The error code a failed job reports: a catalogued error's wire code, else `internal_error`. */
export function jobErrorCode(err: unknown): string {
  return isVoxdError(err) ? ERROR_CODES[err.code].apiCode : 'internal_error';
}
