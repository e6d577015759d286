package catalog

// DigestSettings is the digest session's settings (digestSettings), for
// the tests that check them against a database's own.
const DigestSettings = digestSettings
