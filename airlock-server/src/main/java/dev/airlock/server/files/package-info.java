/** Files in a sandbox: upload, download, list, stat, mkdir, rename, remove, each recorded in the audit log. Used by the service; uses live sandboxes and the command API. */
package dev.airlock.server.files;
