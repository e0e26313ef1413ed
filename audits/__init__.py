"""audits: the statistical auditor, deployment targets, certification, reports and the `gtm` CLI."""
