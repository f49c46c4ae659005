package dev.airlock.server.cluster;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.server.audit.AuditLog;
import dev.airlock.server.audit.AuditReader;
import dev.airlock.server.command.Command.NodeView;
import dev.airlock.server.config.ClusterSettings;
import dev.airlock.server.live.SharedQuotas;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import java.util.function.IntSupplier;

/**
 * This server as a node of a cluster (docs/cluster.md): its row in the shared PostgreSQL database's
 * node table, taken when it starts, refreshed by a heartbeat every third of its lease, marked left
 * when it stops; and the cluster's nodes as every node reads them. Time is the database's
 * ({@code now()}), so nodes whose clocks differ still agree on which node is down: one whose last
 * heartbeat is older than its own lease.
 *
 * <p>Bounded: one connection per node, each call within the driver's connect (5 s) and socket
 * (10 s) timeouts; a heartbeat that fails is logged once per outage and tried again at the next beat.
 */
public final class ClusterMembership implements SharedQuotas, AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(ClusterMembership.class);
    /** Serializes schema creation across nodes that start at once (an advisory lock's key). */
    private static final long SCHEMA_LOCK = 0x6169726c6f636bL;
    /** The most nodes a listing returns. */
    static final int MAX_NODES = 1000;
    /** The lease of the cluster-wide duties: one node at a time holds it (docs/cluster.md#duties). */
    static final String DUTIES = "duties";
    /** A node's newest audit anchors kept whole; older ones are thinned to the first of each hour, and cut past the log's retention. */
    static final int RECENT_ANCHORS = 1000;

    private final ClusterSettings settings;
    private final String instance = UUID.randomUUID().toString();
    /** The cluster's secret, as read at the join: what the calls between nodes are signed with. */
    private byte[] secret;
    private final Object lock = new Object();
    private Connection db;
    private volatile IntSupplier sandboxes = () -> 0;
    private volatile Thread heartbeat;
    private volatile boolean closed;
    private boolean failing;
    /** Places whose sandbox could not be named (the database away), by place: named at the next heartbeat. */
    private final java.util.Map<String, String> unbound = new java.util.concurrent.ConcurrentHashMap<>();
    /** Places whose release failed (the database away): given back at the next heartbeat. */
    private final java.util.Set<String> unreleased = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** This node's audit log, whose head it anchors in the database every lease; null until {@link #anchorAudit}. */
    private volatile AuditLog audit;
    private long anchoredSeq;
    private long anchoredAt;
    private boolean anchorConflictSaid;
    /** The fencing token of the duties' lease while this node holds it; 0 when it does not. */
    private long dutyToken;

    private ClusterMembership(ClusterSettings settings) {
        this.settings = settings;
    }

    /**
     * Joins the cluster: the schema made if it is not there, the secret checked against the one the
     * first node set, and this node's row taken. Refused when the database cannot be reached, the
     * secret differs, or a running node holds the name.
     *
     * @param tiers    the isolation tiers this node offers
     * @param capacity the most sandboxes it holds at once
     */
    public static ClusterMembership join(ClusterSettings settings, List<String> tiers, int capacity) {
        byte[] secret = settings.readSecret();
        ClusterMembership m = new ClusterMembership(settings);
        try {
            synchronized (m.lock) {
                m.db = m.connect();
                m.schema();
                m.checkSecret(secret);
                m.secret = secret;
                m.take(tiers, capacity);
            }
            m.heartbeat = Thread.ofVirtual().name("airlock-cluster-heartbeat").start(m::beatUntilClosed);
            return m;
        } catch (RuntimeException e) {
            m.closeConnection();
            throw e;
        }
    }

    public String nodeName() {
        return settings.nodeName();
    }

    /** The cluster's secret this node joined with (read once, at the join). */
    byte[] secret() {
        return secret.clone();
    }

    private Connection connect() {
        try {
            return connection(settings.url(), "airlock " + settings.nodeName(), 10);
        } catch (SQLException e) {
            throw AirlockException.unavailable("cannot reach the cluster's database " + settings.shownUrl() + ": " + e.getMessage()
                    + " (--cluster gives its URL; the database must be running and reachable from this node)");
        }
    }

    private void schema() {
        try {
            db.setAutoCommit(false);
            try (Statement st = db.createStatement()) {
                st.execute("SELECT pg_advisory_xact_lock(" + SCHEMA_LOCK + ")");
                st.execute("CREATE TABLE IF NOT EXISTS airlock_cluster (id INT PRIMARY KEY CHECK (id = 1), secret_sha256 TEXT NOT NULL,"
                        + " created_at TIMESTAMPTZ NOT NULL DEFAULT now())");
                st.execute("CREATE TABLE IF NOT EXISTS airlock_nodes (name TEXT PRIMARY KEY, instance TEXT NOT NULL,"
                        + " api_address TEXT NOT NULL, tiers TEXT NOT NULL, capacity INT NOT NULL, sandboxes INT NOT NULL DEFAULT 0,"
                        + " draining BOOLEAN NOT NULL DEFAULT false, lease_ms BIGINT NOT NULL, started_at TIMESTAMPTZ NOT NULL,"
                        + " heartbeat_at TIMESTAMPTZ NOT NULL, left_at TIMESTAMPTZ)");
                // places: one per sandbox, from before its create until it is gone; a client's count against its quota
                st.execute("CREATE TABLE IF NOT EXISTS airlock_places (id TEXT PRIMARY KEY, node TEXT NOT NULL, client TEXT NOT NULL,"
                        + " created_at TIMESTAMPTZ NOT NULL)");
                st.execute("CREATE INDEX IF NOT EXISTS airlock_places_client ON airlock_places (client)");
                // between nodes: each node's peer port and the fingerprint of its certificate; a place's sandbox once created
                st.execute("ALTER TABLE airlock_nodes ADD COLUMN IF NOT EXISTS peer_address TEXT NOT NULL DEFAULT ''");
                st.execute("ALTER TABLE airlock_nodes ADD COLUMN IF NOT EXISTS peer_sha256 TEXT NOT NULL DEFAULT ''");
                st.execute("ALTER TABLE airlock_places ADD COLUMN IF NOT EXISTS sandbox TEXT");
                st.execute("CREATE INDEX IF NOT EXISTS airlock_places_sandbox ON airlock_places (sandbox)");
                // each node's audit chain head, published every lease: what 'airlock audit verify --cluster' checks its log against
                st.execute("CREATE TABLE IF NOT EXISTS airlock_audit_anchors (node TEXT NOT NULL, seq BIGINT NOT NULL, hash TEXT NOT NULL,"
                        + " anchored_at TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (node, seq))");
                // the lease of a duty the cluster's nodes share: its holder, and a token that grows each time another takes it
                st.execute("CREATE TABLE IF NOT EXISTS airlock_duties (name TEXT PRIMARY KEY, holder TEXT NOT NULL, instance TEXT NOT NULL,"
                        + " token BIGINT NOT NULL, expires_at TIMESTAMPTZ NOT NULL)");
            }
            db.commit();
            db.setAutoCommit(true);
        } catch (SQLException e) {
            throw failed("cannot make the cluster's tables", e);
        }
    }

    /** The first node's secret is the cluster's; every other must hold the same. */
    private void checkSecret(byte[] secret) {
        String digest = sha256(secret);
        try (PreparedStatement ins = db.prepareStatement("INSERT INTO airlock_cluster (id, secret_sha256) VALUES (1, ?) ON CONFLICT (id) DO NOTHING");
             PreparedStatement sel = db.prepareStatement("SELECT secret_sha256 FROM airlock_cluster WHERE id = 1")) {
            ins.setString(1, digest);
            ins.executeUpdate();
            try (ResultSet rs = sel.executeQuery()) {
                rs.next();
                if (!MessageDigest.isEqual(rs.getString(1).getBytes(java.nio.charset.StandardCharsets.US_ASCII),
                        digest.getBytes(java.nio.charset.StandardCharsets.US_ASCII))) {
                    throw AirlockException.invalid("this node's cluster secret (" + settings.secretFile() + ") is not the cluster's:"
                            + " give every node the same secret file as the node that made the cluster");
                }
            }
        } catch (SQLException e) {
            throw failed("cannot check the cluster secret", e);
        }
    }

    /** Takes this node's row: refused while a node that has not left and is not silent holds the name. */
    private void take(List<String> tiers, int capacity) {
        try {
            db.setAutoCommit(false);
            // two nodes that start at once under one name: the second waits, then finds the first holding it
            try (PreparedStatement lockName = db.prepareStatement("SELECT pg_advisory_xact_lock(hashtext(?))")) {
                lockName.setString(1, "airlock-node:" + settings.nodeName());
                lockName.execute();
            }
            try (PreparedStatement sel = db.prepareStatement("SELECT left_at IS NULL AND now() - heartbeat_at <= lease_ms * interval '1 millisecond',"
                    + " EXTRACT(EPOCH FROM now() - heartbeat_at) FROM airlock_nodes WHERE name = ? FOR UPDATE")) {
                sel.setString(1, settings.nodeName());
                try (ResultSet rs = sel.executeQuery()) {
                    if (rs.next() && rs.getBoolean(1)) {
                        throw new AirlockException(Kind.CONFLICT, "node name '" + settings.nodeName() + "' is held by a running node (its last"
                                + " heartbeat " + Math.round(rs.getDouble(2)) + " s ago): give this node another --node-name, or stop that one"
                                + " (a node that was killed frees its name " + settings.lease().toSeconds() + " s after its last heartbeat)");
                    }
                }
            }
            try (PreparedStatement up = db.prepareStatement("INSERT INTO airlock_nodes (name, instance, api_address, tiers, capacity, lease_ms,"
                    + " started_at, heartbeat_at) VALUES (?, ?, '', ?, ?, ?, now(), now()) ON CONFLICT (name) DO UPDATE SET instance = EXCLUDED.instance,"
                    + " api_address = '', tiers = EXCLUDED.tiers, capacity = EXCLUDED.capacity, sandboxes = 0, lease_ms = EXCLUDED.lease_ms,"
                    + " started_at = now(), heartbeat_at = now(), left_at = NULL")) {
                up.setString(1, settings.nodeName());
                up.setString(2, instance);
                up.setString(3, String.join(",", tiers));
                up.setInt(4, capacity);
                up.setLong(5, settings.lease().toMillis());
                up.executeUpdate();
            }
            // what an earlier run of this node held is gone: reaped by this start, or destroyed when it stopped
            try (PreparedStatement del = db.prepareStatement("DELETE FROM airlock_places WHERE node = ?")) {
                del.setString(1, settings.nodeName());
                del.executeUpdate();
            }
            db.commit();
        } catch (SQLException e) {
            rollback();
            throw failed("cannot register node '" + settings.nodeName() + "'", e);
        } catch (RuntimeException e) {
            rollback();
            throw e;
        } finally {
            autoCommit();
        }
    }

    /**
     * Publishes where this node's API and peer port answer and its certificate's fingerprint, which
     * makes it {@code up} (until then it is {@code starting}); from now on its heartbeat carries how
     * many sandboxes it holds ({@code sandboxCount}).
     */
    public void serving(String apiAddress, String peerAddress, String fingerprint, IntSupplier sandboxCount) {
        this.sandboxes = sandboxCount;
        synchronized (lock) {
            execute("set the address of node '" + settings.nodeName() + "'", "UPDATE airlock_nodes SET api_address = ?, peer_address = ?,"
                    + " peer_sha256 = ?, heartbeat_at = now() WHERE name = ? AND instance = ?", apiAddress, peerAddress, fingerprint,
                    settings.nodeName(), instance);
        }
    }

    /** The heartbeat, from the join on: a node that takes longer than its lease to start is not counted down meanwhile. */
    private void beatUntilClosed() {
        long every = Math.max(100, settings.lease().toMillis() / 3);
        while (!closed) {
            try {
                Thread.sleep(every);
            } catch (InterruptedException e) {
                return;
            }
            beat();
        }
    }

    private void beat() {
        synchronized (lock) {
            if (closed) {
                return;
            }
            try {
                if (execute("send the heartbeat of node '" + settings.nodeName() + "'", "UPDATE airlock_nodes SET heartbeat_at = now(),"
                        + " sandboxes = ? WHERE name = ? AND instance = ?", sandboxes.getAsInt(), settings.nodeName(), instance) == 0) {
                    LOG.error("node '{}': another node took this name after this one was silent past its lease; this node is no longer"
                            + " in the cluster's list", settings.nodeName());
                }
                for (var bound : java.util.Map.copyOf(unbound).entrySet()) {
                    execute("name a place's sandbox", "UPDATE airlock_places SET sandbox = ? WHERE id = ?", bound.getValue(), bound.getKey());
                    unbound.remove(bound.getKey());
                }
                for (String place : List.copyOf(unreleased)) {
                    execute("give back a place", "DELETE FROM airlock_places WHERE id = ?", place);
                    unreleased.remove(place);
                }
                anchor(false);
                duties();
            } catch (AirlockException e) {
                // said once per outage (onDatabase); tried again at the next beat
            }
        }
    }

    /**
     * From now on, the head of {@code log} (its newest record's seq and hash) is published in the
     * database every lease while it moves, and when this node leaves: a node's own audit log is a
     * file on its host, which whoever controls the host could rewrite and re-chain; the anchors
     * published before are out of its reach.
     */
    public void anchorAudit(AuditLog log) {
        this.audit = log;
    }

    /**
     * Publishes the audit log's head, when it moved and a lease has passed since the last ({@code
     * now}: whatever the time); keeps the newest {@value #RECENT_ANCHORS} whole, the first of each
     * hour before them, none older than the log's retention. Called holding the lock.
     */
    private void anchor(boolean now) {
        AuditLog log = audit;
        AuditLog.Head head = log == null ? null : log.head();
        if (head == null || head.seq() <= anchoredSeq || !now && System.currentTimeMillis() - anchoredAt < settings.lease().toMillis()) {
            return;
        }
        String node = settings.nodeName();
        onDatabase("anchor the audit log of node '" + node + "'", db -> {
            try (PreparedStatement ins = db.prepareStatement("INSERT INTO airlock_audit_anchors (node, seq, hash) VALUES (?, ?, ?)"
                    + " ON CONFLICT (node, seq) DO NOTHING")) {
                ins.setString(1, node);
                ins.setLong(2, head.seq());
                ins.setString(3, head.hash());
                if (ins.executeUpdate() == 0 && !anchorConflictSaid && !head.hash().equals(anchored(db, node, head.seq()))) {
                    // another head of this seq is there already: this log is not the one the name published before
                    anchorConflictSaid = true;
                    LOG.error("node '{}': the cluster's database holds an earlier audit anchor of seq {} under this node's name; this"
                            + " node's audit log is not the one published before (a new data directory, or a changed log): 'airlock audit"
                            + " verify --cluster' tells which", node, head.seq());
                }
            }
            try (PreparedStatement thin = db.prepareStatement("DELETE FROM airlock_audit_anchors a WHERE a.node = ? AND (a.anchored_at < now() - ?"
                    + " * interval '1 second' OR a.seq < (SELECT seq FROM airlock_audit_anchors WHERE node = ? ORDER BY seq DESC OFFSET "
                    + (RECENT_ANCHORS - 1) + " LIMIT 1) AND EXISTS (SELECT 1 FROM airlock_audit_anchors b WHERE b.node = a.node"
                    + " AND b.seq < a.seq AND date_trunc('hour', b.anchored_at) = date_trunc('hour', a.anchored_at)))")) {
                thin.setString(1, node);
                thin.setLong(2, log.retention().toSeconds());
                thin.setString(3, node);
                thin.executeUpdate();
            }
            return null;
        });
        anchoredSeq = head.seq();
        anchoredAt = System.currentTimeMillis();
    }

    /** The hash node {@code node} published for seq {@code seq}, or null. */
    private static String anchored(Connection db, String node, long seq) throws SQLException {
        try (PreparedStatement ps = db.prepareStatement("SELECT hash FROM airlock_audit_anchors WHERE node = ? AND seq = ?")) {
            ps.setString(1, node);
            ps.setLong(2, seq);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    /**
     * Takes or renews the lease of the cluster's duties, for a lease from now: a node takes it when
     * none holds it or its holder let it run out (down, partitioned, stopped), and then the fencing
     * token grows by one. The holder does the duties, each statement fenced by its token: one that
     * lost the lease (or whose token is older) changes nothing, even when its statement arrives after
     * another node took over. The duty: the places of a node that has been down for longer than its
     * lease plus {@code lostKept} are removed (its sandboxes, listed {@code lost} until then, are
     * gone from the catalog). Called holding the lock.
     */
    private void duties() {
        String node = settings.nodeName();
        long token = onDatabase("take the lease of the cluster's duties", db -> {
            try (PreparedStatement ps = db.prepareStatement("INSERT INTO airlock_duties (name, holder, instance, token, expires_at)"
                    + " VALUES (?, ?, ?, 1, now() + ? * interval '1 millisecond') ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder,"
                    + " instance = EXCLUDED.instance, expires_at = EXCLUDED.expires_at, token = airlock_duties.token"
                    + " + CASE WHEN airlock_duties.instance = EXCLUDED.instance THEN 0 ELSE 1 END"
                    + " WHERE airlock_duties.instance = EXCLUDED.instance OR airlock_duties.expires_at < now() RETURNING token")) {
                ps.setString(1, DUTIES);
                ps.setString(2, node);
                ps.setString(3, instance);
                ps.setLong(4, settings.lease().toMillis());
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? rs.getLong(1) : 0L;
                }
            }
        });
        if (token != dutyToken) {
            if (token == 0) {
                LOG.info("node '{}' no longer runs the cluster's duties: another node took their lease", node);
            } else {
                LOG.info("node '{}' runs the cluster's duties (fencing token {})", node, token);
            }
            dutyToken = token;
        }
        if (token == 0) {
            return;
        }
        int removed = onDatabase("remove the lost sandboxes of nodes down for long", db -> removeLostPlaces(db, instance, token,
                settings.lostKept()));
        if (removed > 0) {
            LOG.info("node '{}': removed {} lost sandboxes of nodes down for longer than {} s from the cluster's catalog", node, removed,
                    settings.lostKept().toSeconds());
        }
    }

    /**
     * The duty, fenced: removes the places of nodes down for longer than their lease and {@code
     * lostKept}, only while the duties' lease is held by {@code instance} with {@code token} and has
     * not run out; the number removed (0 for a holder that lost the lease, however late its
     * statement arrives). Public for the test that runs a stale holder's statement.
     */
    public static int removeLostPlaces(Connection db, String instance, long token, Duration lostKept) throws SQLException {
        try (PreparedStatement ps = db.prepareStatement("DELETE FROM airlock_places p USING airlock_nodes n"
                + " WHERE p.node = n.name AND n.left_at IS NULL AND now() - n.heartbeat_at > (n.lease_ms + ?) * interval '1 millisecond'"
                + " AND EXISTS (SELECT 1 FROM airlock_duties d WHERE d.name = ? AND d.instance = ? AND d.token = ? AND d.expires_at > now())")) {
            ps.setLong(1, lostKept.toMillis());
            ps.setString(2, DUTIES);
            ps.setString(3, instance);
            ps.setLong(4, token);
            return ps.executeUpdate();
        }
    }

    /**
     * The audit anchors node {@code node} published in the cluster's database at {@code url}, oldest
     * first, for {@code airlock audit verify --cluster}.
     */
    public static List<AuditReader.ClusterAnchor> anchors(String url, String node) {
        String jdbc = ClusterSettings.jdbcUrl(url);
        String shown = ClusterSettings.withoutCredentials(jdbc).substring("jdbc:".length());
        try (Connection db = connection(jdbc, "airlock audit verify", 30)) {
            try (Statement st = db.createStatement(); ResultSet rs = st.executeQuery("SELECT to_regclass('airlock_audit_anchors') IS NOT NULL")) {
                rs.next();
                if (!rs.getBoolean(1)) {
                    throw new AirlockException(Kind.NOT_FOUND, "the database " + shown + " holds no cluster's audit anchors: is it the URL the nodes were"
                            + " given with --cluster?");
                }
            }
            List<AuditReader.ClusterAnchor> out = new ArrayList<>();
            try (PreparedStatement ps = db.prepareStatement("SELECT seq, hash, anchored_at FROM airlock_audit_anchors WHERE node = ? ORDER BY seq")) {
                ps.setString(1, node);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.add(new AuditReader.ClusterAnchor(rs.getLong(1), rs.getString(2), rs.getTimestamp(3).toInstant()));
                    }
                }
            }
            return out;
        } catch (SQLException e) {
            throw AirlockException.unavailable("cannot read the audit anchors in the cluster's database " + shown + ": " + e.getMessage());
        }
    }

    /** A connection to the cluster's database at {@code jdbcUrl}: 5 s to connect and log in, {@code socketSeconds} for each call. */
    private static Connection connection(String jdbcUrl, String applicationName, int socketSeconds) throws SQLException {
        Properties p = new Properties();
        p.setProperty("connectTimeout", "5");
        p.setProperty("socketTimeout", Integer.toString(socketSeconds));
        p.setProperty("loginTimeout", "5");
        p.setProperty("ApplicationName", applicationName);
        return DriverManager.getConnection(jdbcUrl, p);
    }

    /** The database answered: said once when it had not. Called holding the lock. */
    private void answered() {
        if (failing) {
            LOG.info("node '{}': the cluster's database answers again; creates are accepted", settings.nodeName());
            failing = false;
        }
    }

    /** The database did not answer: said once per outage. Called holding the lock. */
    private void unanswered(String why) {
        if (!failing) {
            LOG.warn("node '{}': the cluster's database does not answer, creates are refused until it does (trying every {} ms): {}",
                    settings.nodeName(), Math.max(100, settings.lease().toMillis() / 3), why);
            failing = true;
        }
    }

    /**
     * Takes one of {@code client}'s places: for a client with a quota, under a lock on its name held
     * for the transaction, against its places on every node that is up (a node down or left does not
     * count: its sandboxes are lost or gone).
     */
    @Override
    public String reserve(String client, int quota) {
        synchronized (lock) {
            try {
                String place = onDatabase("take a place for client '" + client + "'", db -> {
                    db.setAutoCommit(false);
                    try (PreparedStatement lockClient = db.prepareStatement("SELECT pg_advisory_xact_lock(hashtext(?))");
                         PreparedStatement count = db.prepareStatement("SELECT count(*) FROM airlock_places p JOIN airlock_nodes n"
                                 + " ON n.name = p.node WHERE p.client = ? AND n.left_at IS NULL"
                                 + " AND now() - n.heartbeat_at <= n.lease_ms * interval '1 millisecond'");
                         PreparedStatement insert = db.prepareStatement("INSERT INTO airlock_places (id, node, client, created_at)"
                                 + " VALUES (?, ?, ?, now())")) {
                        if (quota > 0) {
                            lockClient.setString(1, "airlock-client:" + client);
                            lockClient.execute();
                            count.setString(1, client);
                            try (ResultSet rs = count.executeQuery()) {
                                rs.next();
                                if (rs.getLong(1) >= quota) {
                                    db.commit();
                                    return null;
                                }
                            }
                        }
                        String id = UUID.randomUUID().toString();
                        insert.setString(1, id);
                        insert.setString(2, settings.nodeName());
                        insert.setString(3, client);
                        insert.executeUpdate();
                        db.commit();
                        return id;
                    } catch (SQLException e) {
                        rollback();
                        throw e;
                    } finally {
                        autoCommit();
                    }
                });
                return place;
            } catch (AirlockException e) {
                throw createsRefused(e.getMessage());
            }
        }
    }

    private AirlockException createsRefused(String why) {
        return AirlockException.unavailable("the cluster's database " + settings.shownUrl() + " does not answer (" + why + "), and every"
                + " sandbox of the cluster is counted there (clients' quotas hold across the nodes): creates are refused until it answers;"
                + " the sandboxes this node holds serve on");
    }

    /** Names the sandbox a place holds: from now on any node finds the sandbox's node by its id ({@link #owner}). */
    @Override
    public void bind(String place, String sandbox) {
        synchronized (lock) {
            try {
                execute("name a place's sandbox", "UPDATE airlock_places SET sandbox = ? WHERE id = ?", sandbox, place);
            } catch (AirlockException e) {
                unbound.put(place, sandbox);
            }
        }
    }

    @Override
    public void release(String place) {
        synchronized (lock) {
            try {
                unbound.remove(place);
                execute("give back a place", "DELETE FROM airlock_places WHERE id = ?", place);
                unreleased.remove(place);
            } catch (AirlockException e) {
                unreleased.add(place);
            }
        }
    }

    /** Whether the cluster's database answered this node's last call (a heartbeat, at least every third of the lease). */
    public boolean databaseAnswers() {
        synchronized (lock) {
            return !failing;
        }
    }

    /** The cluster's nodes, by name, with each one's state as the database's clock tells it. */
    public List<NodeView> nodes() {
        synchronized (lock) {
            return onDatabase("read the cluster's nodes", db -> read(db, "ORDER BY name LIMIT " + MAX_NODES));
        }
    }

    /** The nodes {@code where} picks, each as {@link #view} reads it. Called holding the lock. */
    private List<NodeView> read(Connection db, String where, Object... params) throws SQLException {
        try (PreparedStatement ps = db.prepareStatement("SELECT name, api_address, tiers, capacity, sandboxes, draining, started_at,"
                + " heartbeat_at, EXTRACT(EPOCH FROM now() - heartbeat_at), lease_ms, left_at IS NOT NULL FROM airlock_nodes " + where)) {
            for (int i = 0; i < params.length; i++) {
                ps.setObject(i + 1, params[i]);
            }
            List<NodeView> out = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(view(rs));
                }
            }
            return out;
        }
    }

    /**
     * A node as another reaches it, with its state ({@link #view}'s) and the places it holds (the
     * sandboxes it has or is creating); {@code client}: the client of the sandbox it was found by, or null.
     */
    public record Member(String name, String peerAddress, String fingerprint, String state, int capacity, int places, String client) {
        public boolean up() {
            return state.equals("up");
        }
    }

    /** What the database's clock says of a node row {@code n}: left, down, starting, draining or up. */
    private static final String STATE = "CASE WHEN n.left_at IS NOT NULL THEN 'left'"
            + " WHEN now() - n.heartbeat_at > n.lease_ms * interval '1 millisecond' THEN 'down'"
            + " WHEN n.api_address = '' THEN 'starting' WHEN n.draining THEN 'draining' ELSE 'up' END";

    /** The node that holds (or is creating) sandbox {@code sandbox}; null when no node's place names it. */
    public Member owner(String sandbox) {
        synchronized (lock) {
            return onDatabase("find the node of sandbox " + sandbox, db -> {
                try (PreparedStatement ps = db.prepareStatement("SELECT n.name, n.peer_address, n.peer_sha256, " + STATE + ", n.capacity, 0,"
                        + " p.client FROM airlock_places p JOIN airlock_nodes n ON n.name = p.node WHERE p.sandbox = ? LIMIT 1")) {
                    ps.setString(1, sandbox);
                    try (ResultSet rs = ps.executeQuery()) {
                        return rs.next() ? member(rs) : null;
                    }
                }
            });
        }
    }

    /** The sandboxes of {@code client} that nodes now down held, at most {@value #MAX_NODES}. */
    public List<dev.airlock.server.command.NodeRouting.Lost> lost(String client) {
        synchronized (lock) {
            return onDatabase("read the lost sandboxes of client '" + client + "'", db -> {
                try (PreparedStatement ps = db.prepareStatement("SELECT p.sandbox, n.name, " + STATE + " FROM airlock_places p"
                        + " JOIN airlock_nodes n ON n.name = p.node WHERE p.client = ? AND p.sandbox IS NOT NULL AND n.left_at IS NULL"
                        + " AND now() - n.heartbeat_at > n.lease_ms * interval '1 millisecond' ORDER BY p.created_at LIMIT " + MAX_NODES)) {
                    ps.setString(1, client);
                    List<dev.airlock.server.command.NodeRouting.Lost> out = new ArrayList<>();
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            out.add(new dev.airlock.server.command.NodeRouting.Lost(rs.getString(1), rs.getString(2), rs.getString(3)));
                        }
                    }
                    return out;
                }
            });
        }
    }

    /** Node {@code name} as another reaches it, or null when the cluster has none of that name. */
    public Member member(String name) {
        synchronized (lock) {
            return onDatabase("read node '" + name + "'", db -> {
                try (PreparedStatement ps = db.prepareStatement("SELECT n.name, n.peer_address, n.peer_sha256, " + STATE + ", n.capacity, 0,"
                        + " NULL FROM airlock_nodes n WHERE n.name = ?")) {
                    ps.setString(1, name);
                    try (ResultSet rs = ps.executeQuery()) {
                        return rs.next() ? member(rs) : null;
                    }
                }
            });
        }
    }

    /**
     * The nodes a create may be placed on: up (not draining, starting, down or left), offering
     * {@code tier} (null: any), each with the places it holds now, counted from the places table, so
     * creates in flight on every node count.
     */
    public List<Member> candidates(String tier) {
        return serving(tier).stream().filter(Member::up).toList();
    }

    /** The nodes that serve their sandboxes now (up or draining) and offer {@code tier} (null: any), with their places. */
    public List<Member> serving(String tier) {
        synchronized (lock) {
            return onDatabase("read the cluster's serving nodes", db -> {
                try (PreparedStatement ps = db.prepareStatement("SELECT n.name, n.peer_address, n.peer_sha256, " + STATE + ", n.capacity,"
                        + " (SELECT count(*) FROM airlock_places p WHERE p.node = n.name), NULL FROM airlock_nodes n"
                        + " WHERE n.left_at IS NULL AND n.peer_address <> '' AND (? IS NULL OR (',' || n.tiers || ',') LIKE ('%,' || ? || ',%'))"
                        + " ORDER BY n.name LIMIT " + MAX_NODES)) {
                    ps.setString(1, tier);
                    ps.setString(2, tier);
                    List<Member> out = new ArrayList<>();
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            Member m = member(rs);
                            if (m.up() || m.state().equals("draining")) {
                                out.add(m);
                            }
                        }
                    }
                    return out;
                }
            });
        }
    }

    /** A {@link Member} from a row of: name, peer address, fingerprint, {@link #STATE}, capacity, places, client. */
    private static Member member(ResultSet rs) throws SQLException {
        return new Member(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4), rs.getInt(5), rs.getInt(6),
                rs.getString(7));
    }

    /** Stops ({@code draining}) or resumes placements on node {@code name}; its sandboxes run on. */
    public NodeView drain(String name, boolean draining) {
        synchronized (lock) {
            execute("drain node '" + name + "'", "UPDATE airlock_nodes SET draining = ? WHERE name = ?", draining, name);
            return onDatabase("read node '" + name + "'", db -> read(db, "WHERE name = ?", name)).stream().findFirst()
                    .orElseThrow(() -> new AirlockException(Kind.NOT_FOUND, "the cluster has no node '" + dev.airlock.core.Printable.of(name)
                            + "': GET /v1/cluster/nodes (airlock cluster nodes) lists them"));
        }
    }

    private NodeView view(ResultSet rs) throws SQLException {
        String name = rs.getString(1);
        double silent = rs.getDouble(9);
        boolean left = rs.getBoolean(11);
        String state = left ? "left" : silent * 1000 > rs.getLong(10) ? "down" : rs.getString(2).isEmpty() ? "starting"
                : rs.getBoolean(6) ? "draining" : "up";
        String tiers = rs.getString(3);
        return new NodeView(name, rs.getString(2), tiers.isEmpty() ? List.of() : List.of(tiers.split(",")), rs.getInt(4), rs.getInt(5),
                state, rs.getBoolean(6), rs.getTimestamp(7).toInstant(), rs.getTimestamp(8).toInstant(),
                Duration.ofMillis(Math.round(silent * 1000)), name.equals(settings.nodeName()));
    }

    /** Runs one statement with {@code params}; the rows it changed. Called holding the lock. */
    private int execute(String what, String sql, Object... params) {
        return onDatabase(what, db -> {
            try (PreparedStatement ps = db.prepareStatement(sql)) {
                for (int i = 0; i < params.length; i++) {
                    ps.setObject(i + 1, params[i]);
                }
                return ps.executeUpdate();
            }
        });
    }

    /** Work on the connection. */
    private interface Work<T> {
        T on(Connection db) throws SQLException;
    }

    /**
     * Does {@code work} on this node's connection, connecting first when it has none; once more on a
     * new connection when the database had dropped the one it got (it restarted since: SQLSTATE class
     * 08, or 57P01-57P03). Whether the database answered is kept for {@link #databaseAnswers} (and said
     * in the log once per outage). Called holding the lock.
     */
    private <T> T onDatabase(String what, Work<T> work) {
        for (int attempt = 0; ; attempt++) {
            try {
                ensureConnected();
            } catch (AirlockException e) {
                unanswered(e.getMessage());   // no connection could be made
                throw e;
            }
            try {
                T result = work.on(db);
                answered();
                return result;
            } catch (SQLException e) {
                closeConnection();
                String state = e.getSQLState() == null ? "" : e.getSQLState();
                if (attempt == 0 && (state.startsWith("08") || state.matches("57P0[123]"))) {
                    continue;
                }
                String why = "cannot " + what + " in the cluster's database " + settings.shownUrl() + ": " + e.getMessage();
                unanswered(why);
                throw AirlockException.unavailable(why);
            }
        }
    }

    private void ensureConnected() {
        try {
            if (db == null || db.isClosed()) {
                db = connect();
            }
        } catch (SQLException e) {
            db = connect();
        }
    }

    private AirlockException failed(String what, SQLException e) {
        closeConnection();
        return AirlockException.unavailable(what + " in the cluster's database " + settings.shownUrl() + ": " + e.getMessage());
    }

    private void rollback() {
        try {
            if (db != null && !db.isClosed()) {
                db.rollback();
            }
        } catch (SQLException ignored) {
            // the connection is broken: closed with the error
        }
    }

    private void autoCommit() {
        try {
            if (db != null && !db.isClosed()) {
                db.setAutoCommit(true);
            }
        } catch (SQLException ignored) {
            // the connection is broken: the next call reconnects
        }
    }

    private void closeConnection() {
        try {
            if (db != null) {
                db.close();
            }
        } catch (SQLException ignored) {
            // closing a broken connection
        }
        db = null;
    }

    private static String sha256(byte[] secret) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(secret));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Stops the heartbeat and marks this node left, so its name is free at once. */
    @Override
    public void close() {
        closed = true;
        Thread t = heartbeat;
        if (t != null) {
            t.interrupt();
        }
        synchronized (lock) {
            try {
                anchor(true);
            } catch (AirlockException e) {
                LOG.warn("node '{}': could not publish its audit log's last head ({})", settings.nodeName(), e.getMessage());
            }
            try {
                // the duties' lease given up: another node takes it at its next heartbeat, not a lease later
                execute("give up the lease of the cluster's duties", "UPDATE airlock_duties SET expires_at = now() - interval '1 millisecond'"
                        + " WHERE name = ? AND instance = ?", DUTIES, instance);
            } catch (AirlockException e) {
                LOG.warn("node '{}': could not give up the lease of the cluster's duties ({}); another node takes it once it runs out",
                        settings.nodeName(), e.getMessage());
            }
            try {
                execute("mark node '" + settings.nodeName() + "' left", "UPDATE airlock_nodes SET left_at = now(), sandboxes = 0"
                        + " WHERE name = ? AND instance = ?", settings.nodeName(), instance);
                // its sandboxes were destroyed before: what it could not give back then goes now
                execute("give back node '" + settings.nodeName() + "''s places", "DELETE FROM airlock_places WHERE node = ?"
                        + " AND EXISTS (SELECT 1 FROM airlock_nodes WHERE name = ? AND instance = ?)", settings.nodeName(), settings.nodeName(), instance);
            } catch (AirlockException e) {
                LOG.warn("node '{}': could not mark itself left in the cluster's database ({}); the others count it down after its lease",
                        settings.nodeName(), e.getMessage());
            }
            closeConnection();
        }
    }
}
