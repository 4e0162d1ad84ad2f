/**
 * wyoming_zeroconf with the mDNS library's own browser (multicast works on this machine's loopback):
 * the server announces `<name>._wyoming._tcp.local.` with its Wyoming port, and withdraws it at
 * shutdown (the browser hears the goodbye).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { Bonjour, type Service } from 'bonjour-service';
import { startServer } from '../helpers/voxd.js';

test('wyoming_zeroconf announces the listener as <name>._wyoming._tcp.local. and withdraws it at shutdown', async () => {
  const name = `voxd-test-${randomBytes(4).toString('hex')}`;
  const browser = new Bonjour();
  const s = await startServer({ wyoming_port: 0, wyoming_zeroconf: name, ui_management: true, models: [] });
  try {
    const watch = browser.find({ type: 'wyoming', protocol: 'tcp' });
    const found = new Promise<Service>((resolve) =>
      watch.on('up', (service: Service) => {
        if (service.name === name) resolve(service);
      }),
    );
    const gone = new Promise<void>((resolve) =>
      watch.on('down', (service: Service) => {
        if (service.name === name) resolve();
      }),
    );
    const service = await found;
    assert.equal(service.port, s.voxd.wyoming!.port);
    assert.equal(service.fqdn, `${name}._wyoming._tcp.local`);
    await s.close();
    await gone;
  } finally {
    await s.close();
    browser.destroy();
  }
});
