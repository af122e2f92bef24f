import { registerEraseStep } from "../admin/erasure";
import { eraseOAuthUser } from "./tokens";

/** Erasing a user revokes their OAuth grants (and so every token) and forgets their consents. */
registerEraseStep("oauth", eraseOAuthUser);
