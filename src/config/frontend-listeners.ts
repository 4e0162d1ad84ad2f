/**
 * The frontend listener names voxd serves: a module of its own, so the settings table can name the
 * type without an import cycle through config/types.ts.
 */
export const FRONTEND_LISTENERS = ['https', 'websocket'] as const;
/** A listener, or `""` for none (the default). */
export type FrontendListener = '' | (typeof FRONTEND_LISTENERS)[number];
