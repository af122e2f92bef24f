import type { Area } from "../http/area";
import { accountRouter } from "./routes";

/** Sign-up, the caller's own account, and erasing it. */
export const accountArea: Area = { name: "account", router: accountRouter };
