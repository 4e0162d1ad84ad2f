/** Model entries for the configs that tests start servers with. */

/** A model of an embedded engine, loaded on its first use. */
export const lazyModel = (id: string, family: string, task: string, extra: Record<string, unknown> = {}) => ({
  id,
  family,
  task,
  lazy: true,
  ...extra,
});

/** The flite voice that tests speak with to make audio. */
export const FLITE = lazyModel('flite', 'flite_tts', 'tts');
