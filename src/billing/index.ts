/**
 * The billing area. It keeps no personal data: about the payer it stores only the Stripe
 * customer id, which names the workspace rather than a user, so it has no erasure step.
 */
export const billingArea = {
  name: "billing",
  routes: {
    paths: ["/v1/api/billing", "/v1/webhooks/stripe"],
    load: async () => (await import("./routes")).billingRouter,
  },
} as const;
