-- A prebuilt database shipped with version 3 of the app: the companies every install starts with.
CREATE TABLE companies (id INTEGER PRIMARY KEY, name TEXT NOT NULL, domain TEXT);
INSERT INTO companies (id, name, domain) VALUES
    (1, 'Analytical Engines Ltd', 'engines.example'),
    (2, 'Bletchley Park', 'bletchley.example'),
    (3, 'Mathematisch Centrum', 'cwi.example');
