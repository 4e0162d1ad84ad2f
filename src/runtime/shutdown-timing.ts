/**
 * The fixed margins of a shutdown, in one place. `shutdown_timeout_ms` is the operator's deadline
 * for running requests; these are what voxd allows past it, in the order they come into play.
 */

/** How long cancelled requests have to send their answer before a shutdown cuts the connections. */
export const CUT_GRACE_MS = 300;

/**
 * How long past the deadline the runtime waits for teardowns (an engine's dispose) before the
 * shutdown ends without them.
 */
export const TEARDOWN_GRACE_MS = 1500;

/**
 * How long past the deadline (or past a second signal) the process waits before it exits anyway:
 * an engine stuck in native code on a thread cannot be interrupted. Longer than the teardown grace,
 * so a teardown that ends within its grace still ends the shutdown cleanly.
 */
export const SHUTDOWN_MARGIN_MS = 2000;

/**
 * How long a clean exit waits for the runner processes it killed to have exited (a SIGKILLed
 * process takes a moment to die). The teardown grace and this stay inside the margin above, so a
 * shutdown that ends within them is never cut by the fallback exit.
 */
export const RUNNER_EXIT_MS = 200;
