import { z } from "@hono/zod-openapi";
import { queryInteger } from "../http/query";
import { problemSchema } from "../platform/problem";

export const LEDGER_KINDS = [
  "monthly_grant",
  "plan_grant",
  "topup",
  "usage",
  "refund",
  "dispute",
  "adjustment",
] as const;
export type LedgerKind = (typeof LEDGER_KINDS)[number];

const SlugSchema = z
  .string()
  .min(1)
  .max(64)
  .openapi({ pattern: "^[a-z0-9][a-z0-9-]*$", description: "A catalogue slug" });

export const PlanSchema = z
  .object({
    slug: z.string().openapi({ example: "pro" }),
    name: z.string(),
    monthly_credits: z.number().int(),
    priced: z.boolean().openapi({ description: "Whether STRIPE_PRICES names a price for it (it can be bought)" }),
    active: z.boolean(),
  })
  .openapi("Plan");
export type Plan = z.infer<typeof PlanSchema>;

export const PackSchema = z
  .object({
    slug: z.string().openapi({ example: "credits-1000" }),
    name: z.string(),
    credits: z.number().int(),
    priced: z.boolean().openapi({ description: "Whether STRIPE_PRICES names a price for it (it can be bought)" }),
  })
  .openapi("CreditPack");
export type Pack = z.infer<typeof PackSchema>;

export const PlanListSchema = z.object({ plans: z.array(PlanSchema) }).openapi("PlanList");
export const PackListSchema = z.object({ packs: z.array(PackSchema) }).openapi("CreditPackList");

export const BillingStatusSchema = z
  .object({
    plan: z.string().openapi({ description: "The plan's slug", example: "free" }),
    status: z.string().openapi({
      description:
        "Stripe's subscription status (`active`, `trialing`, `past_due`, `canceled`, …), or `none` when the workspace never subscribed",
    }),
    current_period_end: z.iso.datetime().nullable(),
    balance: z.number().int(),
    customer: z.boolean().openapi({ description: "Whether the workspace has a Stripe customer" }),
  })
  .openapi("BillingStatus");
export type BillingStatus = z.infer<typeof BillingStatusSchema>;

export const LedgerEntrySchema = z
  .object({
    id: z.uuid(),
    amount: z.number().int().openapi({ description: "Positive for credits, negative for usage, refunds and disputes" }),
    kind: z.enum(LEDGER_KINDS),
    reference: z.string().openapi({
      description:
        "What the entry is for: `free:YYYY-MM`, a Stripe invoice or payment intent id, a dispute id, a usage reference",
    }),
    created_at: z.iso.datetime(),
  })
  .openapi("LedgerEntry");
export type LedgerEntry = z.infer<typeof LedgerEntrySchema>;

export const CreditsSchema = z
  .object({ balance: z.number().int(), entries: z.array(LedgerEntrySchema) })
  .openapi("Credits");

export const CreditsQuerySchema = z.object({
  limit: queryInteger({ name: "limit", default: 50, clamp: [1, 200], description: "Default 50, clamped to 1-200" }),
});

export const CheckoutRequestSchema = z.object({ plan_slug: SlugSchema }).strict().openapi("CheckoutRequest");
export const TopupRequestSchema = z.object({ pack_slug: SlugSchema }).strict().openapi("TopupRequest");
export const RedirectSchema = z
  .object({ url: z.url().openapi({ description: "Where to send the browser (Stripe's hosted page)" }) })
  .openapi("BillingRedirect");

export const WebhookHeadersSchema = z.object({
  "stripe-signature": z
    .string()
    .max(4096)
    .optional()
    .openapi({ param: { name: "stripe-signature", in: "header" }, description: "Stripe's signature of the raw body" }),
});
export const WebhookAckSchema = z
  .object({
    received: z.literal(true),
    duplicate: z.boolean().openapi({ description: "The event id was already processed; nothing was done" }),
  })
  .openapi("WebhookAck");

/** The 402 of any paid action: the usual problem plus the balance and what can be bought. */
export const InsufficientCreditsProblemSchema = problemSchema()
  .extend({
    code: z.literal("insufficient_credits"),
    balance: z.number().int(),
    packs: z.array(PackSchema),
  })
  .openapi("InsufficientCreditsProblem");
