/**
 * What the runtime learns about a request (the model, the slot, the queue wait and the run time),
 * carried back to the HTTP layer for the request's log line, with the moments that split the
 * request's time into phases: its body read and parsed, its engine request made (audio decoded),
 * its last run ended. The route hands it to the runtime beside the request's abort
 * (InferenceOptions.trace); the two are separate objects, so cancellation carries nothing but
 * cancellation.
 */
export class RequestTrace {
  model: string | undefined = undefined;
  slot: number | undefined = undefined;
  queueMs: number | undefined = undefined;
  inferenceMs: number | undefined = undefined;
  /** performance.now() when the body had been read and parsed (a JSON object, a form). */
  readAt: number | undefined = undefined;
  /** performance.now() when the engine request was ready and went to the runtime. */
  preparedAt: number | undefined = undefined;
  /** performance.now() when the last run on a session ended. */
  ranAt: number | undefined = undefined;

  /** The body is read and parsed; the first call counts. */
  bodyRead(): void {
    this.readAt ??= performance.now();
  }

  /** The engine request is ready; the first call counts (a batch's items are one request's). */
  prepared(): void {
    this.preparedAt ??= performance.now();
  }
}
