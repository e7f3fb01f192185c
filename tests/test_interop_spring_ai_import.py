"""Importing conversations that Spring AI's JdbcChatMemoryRepository wrote, on Java.

The writer is ``tests/spring_ai/SpringAiJdbcWriter.java``, run on Spring AI 1.0.1's jars from
Maven Central (resolved once into ``.ci-cache/spring-ai-jdbc``), against the PostgreSQL test
server.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import sqlalchemy

from chatmem import InMemoryChatMemoryRepository
from chatmem.interop.spring_ai_import import import_conversations, spring_ai_jdbc_conversations
from tests.conftest import server_url

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".ci-cache" / "spring-ai-jdbc"
SPRING_AI_VERSION = "1.0.1"
POM = f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>chatmem.tests</groupId><artifactId>spring-ai-jdbc</artifactId><version>1</version>
  <dependencies>
    <dependency>
      <groupId>org.springframework.ai</groupId>
      <artifactId>spring-ai-model-chat-memory-repository-jdbc</artifactId>
      <version>{SPRING_AI_VERSION}</version>
    </dependency>
    <dependency>
      <groupId>org.postgresql</groupId><artifactId>postgresql</artifactId><version>42.7.4</version>
    </dependency>
  </dependencies>
</project>
"""


def _missing(tool: str) -> None:
    message = f"{tool} is not installed; the Spring AI importer test runs Spring AI on Java"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def spring_ai_classpath() -> str:
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            _missing(tool)
    lib = CACHE / "lib"
    if not (lib / f"spring-ai-model-chat-memory-repository-jdbc-{SPRING_AI_VERSION}.jar").exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        (CACHE / "pom.xml").write_text(POM)
        subprocess.run(
            ["mvn", "-q", "-B", "dependency:copy-dependencies", f"-DoutputDirectory={lib}"],
            cwd=CACHE,
            check=True,
            timeout=600,
        )
    return str(lib / "*")


def test_spring_ai_jdbc_table(spring_ai_classpath: str) -> None:
    url = server_url("postgresql")
    parts = urlsplit(url)
    jdbc = f"jdbc:postgresql://{parts.hostname}:{parts.port}{parts.path}"
    conversations = [f"spring-{uuid.uuid4().hex[:8]}", f"spring-{uuid.uuid4().hex[:8]}"]
    writer = ROOT / "tests" / "spring_ai" / "SpringAiJdbcWriter.java"
    subprocess.run(
        [
            "java",
            "-cp",
            spring_ai_classpath,
            str(writer),
            jdbc,
            parts.username or "",
            parts.password or "",
            *conversations,
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    try:
        read = [c for c in spring_ai_jdbc_conversations(url) if c.conversation_id in conversations]
        repository = InMemoryChatMemoryRepository()
        report = import_conversations(read, repository)
        # Five messages each; Spring AI's table kept the tool call and its result without
        # their ids, so two of the five are left out and said so.
        assert (report.conversations, report.messages_stored, report.left_out) == (2, 6, 4)
        for conversation in conversations:
            stored = repository.find_by_conversation_id(conversation)
            assert [(m.type.value, m.text) for m in stored] == [  # type: ignore[union-attr]
                ("system", "Be brief."),
                ("user", f"Weather in Oslo, {conversation}?"),
                ("assistant", "Sunny."),
            ]
            assert stored[0].created_at < stored[2].created_at
        assert import_conversations(read, repository).messages_stored == 0  # nothing twice
    finally:
        engine = sqlalchemy.create_engine(url)
        with engine.begin() as connection:
            connection.execute(
                sqlalchemy.text(
                    "DELETE FROM spring_ai_chat_memory WHERE conversation_id IN :ids"
                ).bindparams(sqlalchemy.bindparam("ids", expanding=True)),
                {"ids": conversations},
            )
        engine.dispose()
