#!/usr/bin/env bash
# The Java client installs the way its README says: `mvn install` into a throw-away local
# repository (dependencies come from ~/.m2 or Maven Central), then a scratch Maven project
# outside the repository depends on io.github.entropy-diode:entropy-client:0.1.0, compiles and
# runs a program that checks the endpoint syntax and the key rule offline.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT

cd "$HERE"
mvn -B -q -ntp -DskipTests package
mvn -B -q -ntp install:install-file -Dfile=target/entropy-client-0.1.0.jar -DpomFile=pom.xml \
  -DlocalRepositoryPath="$SCRATCH/repo"
echo "installed $(find "$SCRATCH/repo" -name '*.jar' -printf '%P\n')"

mkdir -p "$SCRATCH/app/src/main/java/app"
cat > "$SCRATCH/app/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>app</groupId>
  <artifactId>app</artifactId>
  <version>1</version>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <repositories>
    <repository><id>scratch</id><url>file://$SCRATCH/repo</url></repository>
    <repository><id>user-cache</id><url>file://$HOME/.m2/repository</url></repository>
  </repositories>
  <dependencies>
    <dependency>
      <groupId>io.github.entropy-diode</groupId>
      <artifactId>entropy-client</artifactId>
      <version>0.1.0</version>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-compiler-plugin</artifactId>
        <version>3.14.0</version>
      </plugin>
    </plugins>
  </build>
</project>
POM
cat > "$SCRATCH/app/src/main/java/app/Main.java" <<'JAVA'
package app;

import io.github.entropydiode.client.Endpoint;
import io.github.entropydiode.client.EntropyClient;

public class Main {
  public static void main(String[] args) {
    if (!Endpoint.parse("gw.example", false).toString().equals("https://gw.example:50051")) {
      throw new AssertionError("endpoint syntax: " + Endpoint.parse("gw.example", false));
    }
    try {
      EntropyClient.builder().endpoint("127.0.0.1:50051").apiKey("key\n").build();
      throw new AssertionError("a key with a newline was accepted");
    } catch (IllegalArgumentException e) {
      if (!e.getMessage().contains("line break")) throw new AssertionError(e.getMessage());
    }
    System.out.println("scratch project: built against io.github.entropy-diode:entropy-client:0.1.0");
  }
}
JAVA
cd "$SCRATCH/app"
# Its own local repository: an entropy-client installed earlier in ~/.m2 must not stand in for
# the one just built. Dependencies are copied from ~/.m2 (a file repository), else Central.
export MAVEN_OPTS="${MAVEN_OPTS:-} -Dmaven.repo.local=$SCRATCH/m2"
mvn -B -q -ntp package
mvn -B -q -ntp org.apache.maven.plugins:maven-dependency-plugin:3.8.1:build-classpath \
  -Dmdep.outputFile=cp.txt
java -cp "target/classes:$(cat cp.txt)" app.Main
