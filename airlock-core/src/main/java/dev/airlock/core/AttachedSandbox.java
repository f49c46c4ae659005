package dev.airlock.core;

import java.nio.file.Path;

/**
 * A driver's sandbox with what the engine's broker attached to it. Destroying it destroys the
 * sandbox first, then closes the attachment, so nothing of the sandbox still uses what the broker
 * runs for it.
 */
record AttachedSandbox(IsolationDriver.DriverSandbox sandbox, SandboxBroker.Attachment attachment) {

    /**
     * Creates a sandbox of {@code spec} through {@code driver}, which must attach it to {@code broker}
     * exactly once; on any failure the attachment is closed and nothing is left.
     */
    static AttachedSandbox create(IsolationDriver driver, SandboxBroker broker, SandboxSpec spec) {
        return create(driver, broker, spec, null);
    }

    /** As {@link #create(IsolationDriver, SandboxBroker, SandboxSpec)}, restored from {@code checkpoint} when it is not null. */
    static AttachedSandbox create(IsolationDriver driver, SandboxBroker broker, SandboxSpec spec, java.nio.file.Path checkpoint) {
        return create(driver, broker, spec, checkpoint, false);
    }

    /** As {@link #create(IsolationDriver, SandboxBroker, SandboxSpec)}, for the warm pool ({@link IsolationDriver#createForPool}). */
    static AttachedSandbox createForPool(IsolationDriver driver, SandboxBroker broker, SandboxSpec spec) {
        return create(driver, broker, spec, null, true);
    }

    private static AttachedSandbox create(IsolationDriver driver, SandboxBroker broker, SandboxSpec spec, java.nio.file.Path checkpoint,
                                          boolean pooled) {
        SandboxId id = SandboxId.random(driver.instance());
        AttachOnce once = new AttachOnce(broker, driver, id);
        IsolationDriver.DriverSandbox ds;
        try {
            ds = checkpoint != null ? driver.restore(id, spec, once, checkpoint)
                    : pooled ? driver.createForPool(id, spec, once) : driver.create(id, spec, once);
        } catch (RuntimeException | Error e) {
            once.closeAttachment();
            throw e;
        }
        if (once.attachment == null) {
            ds.destroy();
            throw AirlockException.internal("driver " + driver.name() + " created sandbox " + id + " without attaching it to the"
                    + " engine's broker: the driver breaks its contract (IsolationDriver.create)", null);
        }
        return new AttachedSandbox(ds, once.attachment);
    }

    SandboxId id() {
        return sandbox.id();
    }

    void destroy() {
        try {
            sandbox.destroy();
        } finally {
            attachment.close();
        }
    }

    /** The broker as the driver sees it: one attachment per sandbox, kept for the engine. */
    private static final class AttachOnce implements SandboxBroker {
        private final SandboxBroker broker;
        private final IsolationDriver driver;
        private final SandboxId id;
        private Attachment attachment;

        AttachOnce(SandboxBroker broker, IsolationDriver driver, SandboxId id) {
            this.broker = broker;
            this.driver = driver;
            this.id = id;
        }

        @Override
        public synchronized Attachment attach(SandboxId sandbox, SandboxSpec spec, Path runDir, int sandboxHostUid) {
            if (attachment != null || !id.equals(sandbox)) {
                throw new IllegalStateException("driver " + driver.name() + " attached sandbox " + sandbox + " twice, or under another id"
                        + " than " + id + ": the driver breaks its contract (IsolationDriver.create)");
            }
            attachment = broker.attach(sandbox, spec, runDir, sandboxHostUid);
            return attachment;
        }

        synchronized void closeAttachment() {
            if (attachment != null) {
                attachment.close();
            }
        }
    }
}
