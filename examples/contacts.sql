-- Example data for winnow: a small CRM whose contacts were written by several devices that
-- synced through the cloud, so the same person exists more than once.
PRAGMA foreign_keys = ON;

CREATE TABLE companies (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL
);

CREATE TABLE contacts (
    id INTEGER PRIMARY KEY,
    email TEXT,
    first_name TEXT,
    last_name TEXT,
    birth_date TEXT,
    phone TEXT,
    visits INTEGER NOT NULL DEFAULT 0,
    notes TEXT,
    company_id INTEGER REFERENCES companies(id),
    created_at TEXT NOT NULL,
    key_hash TEXT
);
CREATE INDEX contacts_key_hash ON contacts (key_hash);

CREATE TABLE orders (
    id INTEGER PRIMARY KEY,
    contact_id INTEGER NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
    total REAL NOT NULL,
    placed_at TEXT NOT NULL
);
CREATE INDEX orders_contact ON orders (contact_id);

CREATE TABLE tags (
    id INTEGER PRIMARY KEY,
    label TEXT NOT NULL UNIQUE
);

CREATE TABLE contact_tags (
    contact_id INTEGER NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
    tag_id INTEGER NOT NULL REFERENCES tags(id),
    PRIMARY KEY (contact_id, tag_id)
);

INSERT INTO companies (id, name) VALUES (1, 'Acme'), (2, 'Globex'), (3, 'Initech');
INSERT INTO tags (id, label) VALUES (1, 'vip'), (2, 'newsletter'), (3, 'churn-risk');

INSERT INTO contacts (id, email, first_name, last_name, birth_date, phone, visits, notes, company_id, created_at) VALUES
    (1,  'alice@example.com',     'Alice',  'Martin',   '1990-04-01', NULL,            3, 'met at fair',   1, '2024-01-05T10:00:00Z'),
    (2,  ' Alice@Example.com ',   'Alice',  'Martin',   '1990-04-01', '+1 555 0100',   2, NULL,            NULL, '2024-02-11T09:30:00Z'),
    (3,  'ALICE@EXAMPLE.COM',     'alice',  'martin',   '1990-04-01', NULL,            1, 'prefers email', 1, '2024-03-20T16:45:00Z'),
    (4,  'bob@example.com',       'Bob',    'Stone',    '1985-12-24', '+1 555 0199',   7, NULL,            2, '2023-11-02T08:00:00Z'),
    (5,  'bob@example.com',       'Bob',    'Stone',    NULL,         '1-555-0199',           1, 'duplicate',     NULL, '2024-06-01T12:00:00Z'),
    (6,  'émile@example.fr',      'Émile',  'Zola',     '1840-04-02', NULL,            4, NULL,            3, '2024-01-15T11:11:11Z'),
    (7,  'ÉMILE@EXAMPLE.FR',      'ÉMILE',  'ZOLA',     '1840-04-02', '+33 1 23 45 67 89', 0, 'caps lock', NULL, '2024-01-16T11:11:11Z'),
    (8,  'carol@example.com',     'Carol',  'Nguyen',   '1979-07-07', '+1 555 0142',   5, NULL,            2, '2022-05-05T05:05:05Z'),
    (9,  NULL,                    'Dan',    'Okafor',   '1992-02-29', NULL,            1, 'no email',      NULL, '2024-04-04T04:04:04Z'),
    (10, NULL,                    'Dan',    'Okafor',   '1992-02-29', '+1 555 0177',   2, 'no email either', NULL, '2024-04-05T04:04:04Z'),
    (11, 'erin@example.com',      'Erin',   'Walsh',    '2001-09-09', NULL,            0, NULL,            1, '2024-07-07T07:07:07Z'),
    (12, 'frank@example.com',     'Frank',  'Müller',   '1968-03-03', NULL,            9, NULL,            3, '2021-01-01T00:00:00Z'),
    (13, 'FRANK@example.com',     'FRANK',  'MÜLLER',   '1968-03-03', '+49 30 1234567', 1, 'from trade show', NULL, '2024-08-08T08:08:08Z'),
    (14, 'grace@example.com',     'Grace',  'Hopper',   '1906-12-09', NULL,            2, NULL,            NULL, '2024-09-09T09:09:09Z');

INSERT INTO orders (id, contact_id, total, placed_at) VALUES
    (1, 1, 120.50, '2024-01-06'), (2, 2, 35.00, '2024-02-12'), (3, 3, 9.99, '2024-03-21'),
    (4, 4, 250.00, '2023-11-03'), (5, 5, 15.25, '2024-06-02'), (6, 7, 60.00, '2024-01-17'),
    (7, 8, 42.00, '2022-05-06'), (8, 13, 310.00, '2024-08-09'), (9, 12, 18.00, '2021-01-02');

INSERT INTO contact_tags (contact_id, tag_id) VALUES
    (1, 1), (2, 1), (2, 2), (3, 3), (4, 2), (5, 2), (6, 1), (7, 1), (12, 3), (13, 3), (13, 1);
