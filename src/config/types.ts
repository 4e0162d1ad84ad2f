/**
 * The validated server configuration: the audio.cpp `server.json` format plus CLI overrides,
 * with every default applied and every relative path resolved against the config file's folder.
 * Its fields are derived from the settings table (settings.ts): each keyed setting is a field of
 * the type its rule makes, optional or left out where the table says so.
 */
import type { ConfigOf, SettingEntry } from './settings.js';

export * from './model-types.js';

export interface ServerConfig extends ConfigOf<SettingEntry> {
  /** The models root when none is configured: `models` in voxd's data folder (src/config/data-dir.ts). */
  default_models_root: string;
  /** HTTPS instead of HTTP: the certificate chain and private key (tls_cert_file, tls_key_file), read at startup. */
  tls?: { cert: { path: string; pem: string }; key: { path: string; pem: string } };
  /** Folder that relative paths resolved against (the config file's folder, or the cwd). */
  base_dir: string;
}
