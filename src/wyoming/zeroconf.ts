/**
 * `wyoming_zeroconf`: announces the Wyoming listener as `<name>._wyoming._tcp.local.` over mDNS
 * (bonjour-service), the service type Home Assistant's Wyoming integration discovers, so it offers
 * voxd under Settings → Devices & services without typing a host and port. The announcement is
 * withdrawn (mDNS goodbye) at shutdown.
 */
import { Bonjour } from 'bonjour-service';
import type { Logger } from 'pino';

export interface Announcement {
  /** Withdraws the announcement and closes the mDNS socket. */
  stop(): Promise<void>;
}

export function announceWyoming(name: string, port: number, log: Logger): Announcement {
  const bonjour = new Bonjour({}, (err: unknown) => log.warn({ err }, 'wyoming zeroconf: mDNS failed'));
  const service = bonjour.publish({ name, type: 'wyoming', protocol: 'tcp', port });
  service.on('error', (err: unknown) => log.warn({ err }, 'wyoming zeroconf: the announcement failed'));
  log.info({ name, port }, `wyoming zeroconf: announcing ${name}._wyoming._tcp.local.`);
  let stopping: Promise<void> | undefined;
  return {
    stop() {
      stopping ??= new Promise<void>((resolve) => {
        bonjour.unpublishAll(() => {
          bonjour.destroy();
          resolve();
        });
      });
      return stopping;
    },
  };
}
