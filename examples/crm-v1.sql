-- A database created by version 1 of the CRM app (schemas/crm-v1.yaml), with duplicates
-- written by several synced devices.
CREATE TABLE people (
    id INTEGER PRIMARY KEY,
    email TEXT,
    name TEXT,
    phone_number TEXT,
    created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE INDEX people_created ON people (created_at);
INSERT INTO people (id, email, name, phone_number, created_at) VALUES
    (1, 'ada@example.com', 'Ada Lovelace', '+44 20 7946 0001', '2024-01-01T09:00:00Z'),
    (2, 'ADA@example.com ', 'Ada L.', NULL, '2024-02-01T09:00:00Z'),
    (3, 'alan@example.com', 'Alan Turing', NULL, '2024-01-02T09:00:00Z'),
    (4, 'alan@example.com', 'A. Turing', '+44 20 7946 0002', '2024-03-02T09:00:00Z'),
    (5, NULL, 'Grace Hopper', '+1 555 0100', '2024-01-03T09:00:00Z'),
    (6, 'edsger@example.nl', 'Edsger Dijkstra', NULL, '2024-01-04T09:00:00Z');
