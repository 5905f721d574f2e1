"""Real SPARQL clients against a running `cottas-tui serve --write`.

Usage: sparql_clients.py BASE_URL   (e.g. http://127.0.0.1:7878)
Exits non-zero, with the failing check on stderr, when a client cannot use
the endpoint as it would use any SPARQL 1.1 server.
"""

import sys

from SPARQLWrapper import JSON, POST, SPARQLWrapper, TURTLE, XML
from rdflib import Graph, Literal, URIRef
from rdflib.plugins.stores.sparqlstore import SPARQLUpdateStore

base = sys.argv[1]
EX = "http://ex.org/"


def sparqlwrapper_reads_and_writes():
    q = SPARQLWrapper(base + "/query")
    q.setQuery("SELECT ?o WHERE { <https://example.org/default-subject> ?p ?o }")
    q.setReturnFormat(JSON)
    rows = q.query().convert()["results"]["bindings"]
    assert [r["o"]["value"] for r in rows] == ["default"], rows

    q.setQuery("ASK { ?s ?p ?o }")
    assert q.query().convert()["boolean"] is True

    q.setQuery("SELECT ?o WHERE { ?s ?p ?o }")
    q.setReturnFormat(XML)
    xml = q.query().convert()
    assert len(xml.getElementsByTagName("result")) == 1, xml.toxml()

    u = SPARQLWrapper(base + "/query", updateEndpoint=base + "/update")
    u.setMethod(POST)
    u.setQuery(f"INSERT DATA {{ <{EX}w> <{EX}says> \"hello from SPARQLWrapper\" }}")
    u.query()

    q.setQuery(f"CONSTRUCT {{ ?s <{EX}says> ?o }} WHERE {{ ?s <{EX}says> ?o }}")
    q.setReturnFormat(TURTLE)
    g = Graph().parse(data=q.query().convert(), format="turtle")
    assert (URIRef(EX + "w"), URIRef(EX + "says"), Literal("hello from SPARQLWrapper")) in g, g.serialize()
    print("SPARQLWrapper: ok")


def rdflib_store_reads_and_writes():
    store = SPARQLUpdateStore(query_endpoint=base + "/query", update_endpoint=base + "/update")
    g = Graph(store=store, identifier=URIRef(EX + "rdflib-graph"))
    g.add((URIRef(EX + "r"), URIRef(EX + "says"), Literal("hello from rdflib")))
    found = list(store.query(f"SELECT ?o WHERE {{ GRAPH <{EX}rdflib-graph> {{ ?s <{EX}says> ?o }} }}"))
    assert [str(r[0]) for r in found] == ["hello from rdflib"], found
    g.remove((URIRef(EX + "r"), None, None))
    found = list(store.query(f"ASK {{ GRAPH <{EX}rdflib-graph> {{ ?s ?p ?o }} }}"))
    assert found == [False], found
    print("rdflib SPARQLUpdateStore: ok")


sparqlwrapper_reads_and_writes()
rdflib_store_reads_and_writes()
