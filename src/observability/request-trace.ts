/**
 * What the runtime learns about a request (the model, the slot, the queue wait and the run time),
 * carried back to the HTTP layer for the request's log line. The route hands it to the runtime
 * beside the request's abort (InferenceOptions.trace); the two are separate objects, so
 * cancellation carries nothing but cancellation.
 */
export class RequestTrace {
  model: string | undefined = undefined;
  slot: number | undefined = undefined;
  queueMs: number | undefined = undefined;
  inferenceMs: number | undefined = undefined;
}
