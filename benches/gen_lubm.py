#!/usr/bin/env python3
"""Deterministic LUBM-like N-Quads generator for the benchmarks.

    benches/gen_lubm.py QUADS OUT.nq

Universities with departments, faculty, students, courses and publications,
using LUBM's vocabulary; one named graph per university. The same QUADS always
gives the same bytes (a fixed-seed PRNG, no time or hash randomisation).
"""
import random
import sys

UB = "http://swat.cse.lehigh.edu/onto/univ-bench.owl#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
XSD_INT = "http://www.w3.org/2001/XMLSchema#integer"


def iri(x):
    return f"<{x}>"


def lit(s, dt=None, lang=None):
    s = s.replace("\\", "\\\\").replace('"', '\\"')
    if lang:
        return f'"{s}"@{lang}'
    if dt:
        return f'"{s}"^^<{dt}>'
    return f'"{s}"'


def main():
    target = int(sys.argv[1])
    out = open(sys.argv[2], "w", encoding="utf-8", newline="\n")
    rnd = random.Random(20261201)
    n = 0

    def q(s, p, o, g):
        nonlocal n
        if n >= target:
            return
        out.write(f"{s} {iri(UB + p) if not p.startswith('http') else iri(p)} {o} {g} .\n")
        n += 1

    u = 0
    while n < target:
        univ = f"http://www.University{u}.edu"
        g = iri(univ + "/graph")
        q(iri(univ), RDF_TYPE, iri(UB + "University"), g)
        q(iri(univ), "name", lit(f"University{u}"), g)
        for d in range(rnd.randint(15, 25)):
            if n >= target:
                break
            dept = f"http://www.Department{d}.University{u}.edu"
            q(iri(dept), RDF_TYPE, iri(UB + "Department"), g)
            q(iri(dept), "name", lit(f"Department{d}"), g)
            q(iri(dept), "subOrganizationOf", iri(univ), g)
            courses = [f"{dept}/Course{c}" for c in range(rnd.randint(20, 30))]
            grad_courses = [f"{dept}/GraduateCourse{c}" for c in range(rnd.randint(10, 20))]
            for c in courses:
                q(iri(c), RDF_TYPE, iri(UB + "Course"), g)
                q(iri(c), "name", lit(c.rsplit("/", 1)[1]), g)
            for c in grad_courses:
                q(iri(c), RDF_TYPE, iri(UB + "GraduateCourse"), g)
                q(iri(c), "name", lit(c.rsplit("/", 1)[1]), g)
            faculty = []
            for kind, count in (("FullProfessor", rnd.randint(7, 10)), ("AssociateProfessor", rnd.randint(10, 14)),
                                ("AssistantProfessor", rnd.randint(8, 11)), ("Lecturer", rnd.randint(5, 7))):
                for i in range(count):
                    f = f"{dept}/{kind}{i}"
                    faculty.append(f)
                    q(iri(f), RDF_TYPE, iri(UB + kind), g)
                    q(iri(f), "name", lit(f"{kind}{i}"), g)
                    q(iri(f), "emailAddress", lit(f"{kind}{i}@Department{d}.University{u}.edu"), g)
                    q(iri(f), "telephone", lit(f"xxx-xxx-{rnd.randint(0, 9999):04d}"), g)
                    q(iri(f), "worksFor", iri(dept), g)
                    q(iri(f), "researchInterest", lit(f"Research{rnd.randint(0, 29)}"), g)
                    q(iri(f), "undergraduateDegreeFrom", iri(f"http://www.University{rnd.randint(0, 999)}.edu"), g)
                    q(iri(f), "doctoralDegreeFrom", iri(f"http://www.University{rnd.randint(0, 999)}.edu"), g)
                    q(iri(f), "age", lit(str(rnd.randint(30, 70)), dt=XSD_INT), g)
                    for c in rnd.sample(courses, 1) + rnd.sample(grad_courses, 1):
                        q(iri(f), "teacherOf", iri(c), g)
                    for p in range(rnd.randint(3, 8)):
                        pub = f"{f}/Publication{p}"
                        q(iri(pub), RDF_TYPE, iri(UB + "Publication"), g)
                        q(iri(pub), "name", lit(f"Publication{p}"), g)
                        q(iri(pub), "publicationAuthor", iri(f), g)
            q(iri(faculty[0]), "headOf", iri(dept), g)
            for i in range(rnd.randint(80, 120)):
                s = f"{dept}/UndergraduateStudent{i}"
                q(iri(s), RDF_TYPE, iri(UB + "UndergraduateStudent"), g)
                q(iri(s), "name", lit(f"UndergraduateStudent{i}"), g)
                q(iri(s), "emailAddress", lit(f"UndergraduateStudent{i}@Department{d}.University{u}.edu"), g)
                q(iri(s), "memberOf", iri(dept), g)
                for c in rnd.sample(courses, rnd.randint(2, 4)):
                    q(iri(s), "takesCourse", iri(c), g)
                if rnd.random() < 0.2:
                    q(iri(s), "advisor", iri(rnd.choice(faculty)), g)
            for i in range(rnd.randint(20, 30)):
                s = f"{dept}/GraduateStudent{i}"
                q(iri(s), RDF_TYPE, iri(UB + "GraduateStudent"), g)
                q(iri(s), "name", lit(f"GraduateStudent{i}"), g)
                q(iri(s), "memberOf", iri(dept), g)
                q(iri(s), "undergraduateDegreeFrom", iri(f"http://www.University{rnd.randint(0, 999)}.edu"), g)
                q(iri(s), "advisor", iri(rnd.choice(faculty)), g)
                for c in rnd.sample(grad_courses, rnd.randint(1, 3)):
                    q(iri(s), "takesCourse", iri(c), g)
        u += 1
    out.close()
    print(f"{n} quads, {u} universities", file=sys.stderr)


if __name__ == "__main__":
    main()
