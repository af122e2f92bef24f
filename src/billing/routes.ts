import type { Context } from "hono";
import { type AuditEventOf, auditAlone } from "../audit/events";
import { callerEvent } from "../http/audit";
import type { AppEnv } from "../http/context";
import { routesOf } from "../http/endpoint";
import { baseUrl } from "../platform/env";
import { logError } from "../platform/log";
import { ApiError, problemResponse } from "../platform/problem";
import { listPacks, listPlans } from "./catalogue";
import { entries, freeMonthlyCredits, grantedBalance } from "./ledger";
import {
  BillingStatusSchema,
  CheckoutRequestSchema,
  CreditsQuerySchema,
  CreditsSchema,
  PackListSchema,
  PlanListSchema,
  RedirectSchema,
  TopupRequestSchema,
  WebhookAckSchema,
  WebhookHeadersSchema,
} from "./schemas";
import { billingStatus, type StripeRequest, startCheckout, startPortal, startTopup } from "./service";
import { verifiedEvent } from "./stripe";
import { processEvent } from "./webhook";

const route = routesOf(["Billing"]);

const notConfigured = problemResponse("Billing is not configured (`billing_not_configured`: no Stripe keys)");
/** What a route that calls Stripe may answer besides its own errors. */
const stripeErrors = {
  502: "Stripe refused or failed the request (`payment_provider_error`)",
  503: notConfigured,
};
/**
 * A Stripe call of this request: the Idempotency-Key is tied to the request, so the SDK's retries
 * of it are safe; a customer created for the workspace is recorded with the link to it.
 */
const stripeRequest = (c: Context<AppEnv>): StripeRequest => ({
  origin: baseUrl(c.env, c.req.url),
  requestKey: c.get("requestId"),
  customerEvent: (customerId) =>
    callerEvent(c, {
      kind: "billing.customer",
      target: `workspace:${c.var.caller.workspace.id}`,
      intent: "create_customer",
      details: { customer_id: customerId },
    }),
});

/**
 * Records the Stripe session a route opened (nothing changed in D1, so the event stands alone)
 * and answers the Stripe page to send the browser to.
 */
async function redirectTo(c: Context<AppEnv>, url: string, event: AuditEventOf) {
  await auditAlone(c.env, callerEvent(c, event));
  return c.json({ url }, 200);
}

route("authenticated", "GET /v1/api/billing/plans", "The plan catalogue", {
  description: "`priced` plans can be bought through checkout; the free plan is never priced.",
  responses: { 200: [PlanListSchema, "Every plan, cheapest first"] },
}).handle(async (c) => c.json({ plans: await listPlans(c.env, freeMonthlyCredits(c.env)) }, 200));

route("authenticated", "GET /v1/api/billing/packs", "The credit-pack catalogue", {
  description: "`priced` packs can be bought through top-up, on any plan.",
  responses: { 200: [PackListSchema, "Every credit pack, smallest first"] },
}).handle(async (c) => c.json({ packs: await listPacks(c.env) }, 200));

route(
  { scope: "billing:read" },
  "GET /v1/api/billing",
  "The workspace's plan, subscription status and credit balance",
  {
    description:
      "A workspace on the free plan receives its monthly credits (`free:YYYY-MM`) at its first use in the month, this read included.",
    responses: { 200: [BillingStatusSchema, "The billing state"] },
  },
).handle(async (c) => c.json(await billingStatus(c.env, c.var.caller.workspace.id), 200));

route({ scope: "billing:read" }, "GET /v1/api/billing/credits", "The credit balance and the newest ledger entries", {
  query: CreditsQuerySchema,
  responses: {
    200: [CreditsSchema, "Balance (sum of every entry) and entries, newest first"],
    400: "`limit` is not an integer",
  },
}).handle(async (c) => {
  const workspaceId = c.var.caller.workspace.id;
  const balance = await grantedBalance(c.env, workspaceId);
  return c.json({ balance, entries: await entries(c.env, workspaceId, c.req.valid("query").limit) }, 200);
});

route("admin", "POST /v1/api/billing/checkout", "Start a subscription checkout", {
  description:
    "Creates the workspace's Stripe customer if it has none, then a subscription-mode Checkout Session for the plan. " +
    "Nothing is provisioned here: the plan changes when Stripe reports the subscription to the webhook.",
  body: CheckoutRequestSchema,
  responses: {
    200: [RedirectSchema, "Stripe's hosted checkout page"],
    400: "Invalid body, a plan that is no longer offered (`plan_inactive`), has no price (`plan_not_priced`), or a workspace already subscribed (`already_subscribed`: use the portal)",
    404: "No such plan (`plan_not_found`)",
    ...stripeErrors,
  },
}).handle(async (c) => {
  const { plan_slug } = c.req.valid("json");
  const r = await startCheckout(c.env, c.var.caller.workspace.id, plan_slug, stripeRequest(c));
  const details = { plan_slug, session_id: r.sessionId };
  return redirectTo(c, r.url, { kind: "billing.checkout", target: `plan:${plan_slug}`, intent: "checkout", details });
});

route("admin", "POST /v1/api/billing/portal", "Open the billing portal", {
  description:
    "Creates the workspace's Stripe customer if it has none, then a billing-portal session where payment methods, invoices and the subscription are managed.",
  responses: { 200: [RedirectSchema, "Stripe's hosted billing portal"], ...stripeErrors },
}).handle(async (c) => {
  const workspaceId = c.var.caller.workspace.id;
  const r = await startPortal(c.env, workspaceId, stripeRequest(c));
  const details = { session_id: r.sessionId };
  return redirectTo(c, r.url, {
    kind: "billing.portal",
    target: `workspace:${workspaceId}`,
    intent: "open_portal",
    details,
  });
});

route("admin", "POST /v1/api/billing/topup", "Buy a credit pack", {
  description:
    "A payment-mode Checkout Session for one pack, on any plan (a customer is created on demand). " +
    "The credits are added when Stripe reports the paid checkout to the webhook, never from the success redirect.",
  body: TopupRequestSchema,
  responses: {
    200: [RedirectSchema, "Stripe's hosted checkout page"],
    400: "Invalid body, or a pack without a price (`pack_not_priced`)",
    404: "No such credit pack (`pack_not_found`)",
    ...stripeErrors,
  },
}).handle(async (c) => {
  const { pack_slug } = c.req.valid("json");
  const r = await startTopup(c.env, c.var.caller.workspace.id, pack_slug, stripeRequest(c));
  const details = { pack_slug, session_id: r.sessionId };
  return redirectTo(c, r.url, { kind: "billing.topup", target: `pack:${pack_slug}`, intent: "topup", details });
});

route("public", "POST /v1/webhooks/stripe", "Stripe webhook", {
  description:
    "Stripe's events, authenticated by the `Stripe-Signature` over the raw body. Each event id is processed once. " +
    "Handled: `checkout.session.completed`, `checkout.session.async_payment_succeeded`, `customer.subscription.created|updated|deleted`, " +
    "`invoice.paid`, `charge.refunded`, `charge.dispute.created`; anything else is acknowledged and ignored.",
  request: { headers: WebhookHeadersSchema },
  responses: {
    200: [WebhookAckSchema, "Processed, ignored, or already processed"],
    400: "Missing or invalid signature (`invalid_signature`)",
    500: "The event could not be processed (`webhook_failed`); Stripe retries it",
    503: notConfigured,
  },
}).handle(async (c) => {
  const event = await verifiedEvent(c.env, await c.req.text(), c.req.valid("header")["stripe-signature"]);
  let outcome: Awaited<ReturnType<typeof processEvent>>;
  try {
    outcome = await processEvent(c.env, event);
  } catch (error) {
    logError("stripe webhook failed", error, {
      request_id: c.get("requestId"),
      event_id: event.id,
      event_type: event.type,
    });
    throw new ApiError(500, "webhook_failed", "The event could not be processed; Stripe will retry it");
  }
  return c.json({ received: true as const, duplicate: outcome.duplicate }, 200);
});

export const billingRouter = route.router;
