/**
 * How the crawler recognizes the technologies a site runs on: one row per clue, each with the
 * confidence that the clue alone means the technology. Clues found together combine as
 * independent evidence (1 − Π(1 − c)), so two weak clues outrank one of them.
 *
 * - `header`: a response header of the home page (`name`), its value matched by `pattern`;
 * - `generator`: the content of `<meta name="generator">`;
 * - `script`: a `<script>`'s `src`, or `#id` for an inline script with an id;
 * - `link`: a `<link>`'s `href`.
 */
export type SignatureKind = "header" | "generator" | "script" | "link";

export type Signature = {
  name: string;
  kind: SignatureKind;
  /** For `header`: the header's name, lowercase. */
  header?: string;
  pattern: RegExp;
  confidence: number;
};

const any = /./;

export const SIGNATURES: readonly Signature[] = [
  // content management and site builders
  { name: "WordPress", kind: "generator", pattern: /^wordpress/i, confidence: 0.95 },
  { name: "WordPress", kind: "link", pattern: /\/wp-(?:content|includes)\//, confidence: 0.8 },
  { name: "WordPress", kind: "script", pattern: /\/wp-(?:content|includes)\//, confidence: 0.8 },
  { name: "WordPress", kind: "header", header: "link", pattern: /\/wp-json\//, confidence: 0.9 },
  { name: "WooCommerce", kind: "link", pattern: /\/plugins\/woocommerce\//, confidence: 0.85 },
  { name: "WooCommerce", kind: "generator", pattern: /^woocommerce/i, confidence: 0.95 },
  { name: "Drupal", kind: "generator", pattern: /^drupal/i, confidence: 0.95 },
  { name: "Drupal", kind: "header", header: "x-generator", pattern: /^drupal/i, confidence: 0.95 },
  { name: "Joomla", kind: "generator", pattern: /^joomla/i, confidence: 0.95 },
  { name: "Squarespace", kind: "generator", pattern: /squarespace/i, confidence: 0.95 },
  { name: "Wix", kind: "generator", pattern: /^wix\.com/i, confidence: 0.95 },
  { name: "Wix", kind: "header", header: "x-wix-request-id", pattern: any, confidence: 0.9 },
  { name: "Webflow", kind: "generator", pattern: /^webflow/i, confidence: 0.95 },
  { name: "Ghost", kind: "generator", pattern: /^ghost/i, confidence: 0.95 },
  { name: "Hugo", kind: "generator", pattern: /^hugo/i, confidence: 0.9 },
  { name: "Jekyll", kind: "generator", pattern: /^jekyll/i, confidence: 0.9 },
  { name: "Gatsby", kind: "generator", pattern: /^gatsby/i, confidence: 0.9 },
  // commerce
  { name: "Shopify", kind: "header", header: "x-shopid", pattern: any, confidence: 0.95 },
  { name: "Shopify", kind: "header", header: "powered-by", pattern: /shopify/i, confidence: 0.95 },
  { name: "Shopify", kind: "script", pattern: /cdn\.shopify\.com|\/cdn\/shop\//, confidence: 0.85 },
  { name: "Shopify", kind: "link", pattern: /cdn\.shopify\.com|\/cdn\/shop\//, confidence: 0.8 },
  { name: "Stripe", kind: "script", pattern: /js\.stripe\.com/, confidence: 0.9 },
  // frameworks and libraries
  { name: "Next.js", kind: "header", header: "x-powered-by", pattern: /next\.js/i, confidence: 0.95 },
  { name: "Next.js", kind: "script", pattern: /\/_next\/static\//, confidence: 0.9 },
  { name: "Next.js", kind: "script", pattern: /^#__NEXT_DATA__$/, confidence: 0.9 },
  { name: "Next.js", kind: "link", pattern: /\/_next\/static\//, confidence: 0.8 },
  { name: "Nuxt", kind: "script", pattern: /\/_nuxt\//, confidence: 0.9 },
  {
    name: "React",
    kind: "script",
    pattern: /\/_next\/static\/|react(?:-dom)?(?:\.production)?(?:\.min)?\.js/,
    confidence: 0.6,
  },
  { name: "jQuery", kind: "script", pattern: /jquery(?:[.-][\d.]+)?(?:\.min)?\.js/i, confidence: 0.85 },
  { name: "Bootstrap", kind: "link", pattern: /bootstrap(?:\.min)?\.css/i, confidence: 0.8 },
  { name: "Bootstrap", kind: "script", pattern: /bootstrap(?:\.bundle)?(?:\.min)?\.js/i, confidence: 0.8 },
  { name: "Express", kind: "header", header: "x-powered-by", pattern: /^express/i, confidence: 0.9 },
  { name: "PHP", kind: "header", header: "x-powered-by", pattern: /^php/i, confidence: 0.9 },
  // fonts, analytics and widgets
  { name: "Google Fonts", kind: "link", pattern: /fonts\.googleapis\.com|fonts\.gstatic\.com/, confidence: 0.95 },
  { name: "Google Tag Manager", kind: "script", pattern: /googletagmanager\.com\/gtm\.js/, confidence: 0.95 },
  {
    name: "Google Analytics",
    kind: "script",
    pattern: /googletagmanager\.com\/gtag\/js|google-analytics\.com/,
    confidence: 0.9,
  },
  { name: "Plausible", kind: "script", pattern: /plausible\.io\/js\//, confidence: 0.95 },
  { name: "HubSpot", kind: "script", pattern: /js\.hs-scripts\.com|js\.hsforms\.net/, confidence: 0.9 },
  { name: "Intercom", kind: "script", pattern: /widget\.intercom\.io|js\.intercomcdn\.com/, confidence: 0.9 },
  { name: "Zendesk", kind: "script", pattern: /static\.zdassets\.com/, confidence: 0.9 },
  { name: "Hotjar", kind: "script", pattern: /static\.hotjar\.com/, confidence: 0.9 },
  { name: "Segment", kind: "script", pattern: /cdn\.segment\.com/, confidence: 0.9 },
  // hosting and servers
  { name: "Cloudflare", kind: "header", header: "cf-ray", pattern: any, confidence: 0.9 },
  { name: "Cloudflare", kind: "header", header: "server", pattern: /^cloudflare/i, confidence: 0.9 },
  { name: "Vercel", kind: "header", header: "x-vercel-id", pattern: any, confidence: 0.95 },
  { name: "Vercel", kind: "header", header: "server", pattern: /^vercel/i, confidence: 0.9 },
  { name: "Netlify", kind: "header", header: "x-nf-request-id", pattern: any, confidence: 0.95 },
  { name: "Netlify", kind: "header", header: "server", pattern: /^netlify/i, confidence: 0.9 },
  { name: "Nginx", kind: "header", header: "server", pattern: /^nginx/i, confidence: 0.85 },
  { name: "Apache", kind: "header", header: "server", pattern: /^apache/i, confidence: 0.85 },
  { name: "Amazon CloudFront", kind: "header", header: "x-amz-cf-id", pattern: any, confidence: 0.9 },
];

/** Collects clues and answers the technologies, most confident first (ties by name). */
export class TechnologyMatcher {
  private readonly evidence = new Map<string, Map<Signature, true>>();

  private match(kind: SignatureKind, value: string, header?: string): void {
    if (!value && kind !== "header") return;
    for (const sig of SIGNATURES) {
      if (sig.kind !== kind || (header !== undefined && sig.header !== header)) continue;
      if (!sig.pattern.test(value)) continue;
      const seen = this.evidence.get(sig.name) ?? new Map<Signature, true>();
      seen.set(sig, true);
      this.evidence.set(sig.name, seen);
    }
  }

  headers(headers: Headers): void {
    for (const [name, value] of headers) this.match("header", value, name.toLowerCase());
  }
  generator(content: string): void {
    this.match("generator", content.trim());
  }
  script(srcOrId: string): void {
    this.match("script", srcOrId);
  }
  link(href: string): void {
    this.match("link", href);
  }

  result(): { name: string; confidence: number }[] {
    return [...this.evidence]
      .map(([name, sigs]) => {
        const miss = [...sigs.keys()].reduce((m, s) => m * (1 - s.confidence), 1);
        return { name, confidence: Math.round((1 - miss) * 100) / 100 };
      })
      .sort((a, b) => b.confidence - a.confidence || a.name.localeCompare(b.name));
  }
}
