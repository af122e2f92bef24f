/** Eight random hex characters, for names, emails and slugs that must not collide across tests. */
export const unique = () => crypto.randomUUID().slice(0, 8);
