-- The plan and credit-pack catalogues. Prices are not stored: STRIPE_PRICES maps a slug to
-- its Stripe price id, and a slug without one is not for sale.
INSERT INTO `plans` (`slug`, `name`, `monthly_credits`, `active`, `position`, `created_at`) VALUES
  ('free', 'Free', 100, 1, 0, '2026-11-23T00:00:00.000Z'),
  ('pro', 'Pro', 5000, 1, 1, '2026-11-23T00:00:00.000Z'),
  ('team', 'Team', 25000, 1, 2, '2026-11-23T00:00:00.000Z');
--> statement-breakpoint
INSERT INTO `credit_packs` (`slug`, `name`, `credits`, `position`, `created_at`) VALUES
  ('credits-1000', '1,000 credits', 1000, 0, '2026-11-23T00:00:00.000Z'),
  ('credits-5000', '5,000 credits', 5000, 1, '2026-11-23T00:00:00.000Z'),
  ('credits-20000', '20,000 credits', 20000, 2, '2026-11-23T00:00:00.000Z');
