// The service's Miniflare options from wrangler.toml, for every bench that runs the bundle:
// every binding (D1, R2, Durable Objects, queues, rate limiters, vars), so the benches follow
// the config as areas add bindings.
import path from "node:path";
import { unstable_getMiniflareWorkerOptions } from "wrangler";

export function serviceConfig(root) {
  const { workerOptions } = unstable_getMiniflareWorkerOptions(path.join(root, "wrangler.toml"));
  // The bundle is already bundled; and no bench reads a PDF, so the PDF reader Worker the
  // PDF_READER binding names is not started (Miniflare refuses a binding to a missing Worker).
  const { modulesRules: _bundled, serviceBindings, ...config } = workerOptions;
  const { PDF_READER: _pdf, ...otherServices } = serviceBindings ?? {};
  return Object.keys(otherServices).length ? { ...config, serviceBindings: otherServices } : config;
}
