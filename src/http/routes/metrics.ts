/** GET /metrics: the Prometheus scrape (docs/observability.md lists every metric). */
import { notFound } from '../../errors.js';
import type { Route } from '../transport/route.js';

export const metricsRoutes: Route[] = [
  {
    method: 'GET',
    path: '/metrics',
    // Open while listed in open_endpoints (the default), like /health and /ready.
    scope: 'open',
    handler: async (ctx) => {
      if (!ctx.metrics) throw notFound('unknown endpoint: /metrics');
      const { text, contentType } = await ctx.metrics.scrape();
      return { body: Buffer.from(text, 'utf8'), contentType };
    },
  },
];
