// The one pattern of a bcrypt hash, for the deprecated server.basicAuthUsers and the web config
// file's basic_auth_users alike.

/** A bcrypt hash as htpasswd -B and Go's bcrypt write it ($2a$, $2b$, $2y$; cost 4 to 31). */
export const BCRYPT_HASH = /^\$2[aby]?\$(?:0[4-9]|[12]\d|3[01])\$[./A-Za-z0-9]{53}$/;
