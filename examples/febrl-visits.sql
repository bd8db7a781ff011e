-- A child table for FEBRL's people (shared/datasets/febrl3.sqlite): two of every three people
-- have a visit, so deduplicating people must re-point visits from each loser to its winner.
CREATE TABLE visits (
    id INTEGER PRIMARY KEY,
    person_id INTEGER NOT NULL REFERENCES people(id),
    visited_on TEXT NOT NULL
);
CREATE INDEX visits_person ON visits (person_id);
INSERT INTO visits (person_id, visited_on)
SELECT id, printf('2026-%02d-%02d', id % 12 + 1, id % 28 + 1) FROM people WHERE id % 3 <> 0 ORDER BY id;
