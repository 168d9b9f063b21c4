// Sphere impostors: one camera-facing quad per instance, just large enough to cover the sphere's
// silhouette, placed on the plane through the sphere's nearest point (so the near plane clips it
// no earlier than the sphere itself). The fragment shader ray-casts the sphere.
layout(location = 0) in vec2 a_corner;  // (+-1, +-1)
layout(location = 1) in vec4 a_sphere;  // world centre, radius
layout(location = 2) in float a_speed;

uniform mat4 u_view;
uniform mat4 u_proj;

out vec3 v_pos; // view-space point on the quad
flat out vec3 v_center;
flat out float v_radius;
flat out float v_speed;

void main() {
  vec3 c = (u_view * vec4(a_sphere.xyz, 1.0)).xyz;
  float r = a_sphere.w;
  float d = length(c);
  v_center = c;
  v_radius = r;
  v_speed = a_speed;
  v_pos = vec3(0.0);
  if (!(r > 0.0) || d <= r * 1.0001) { // the eye is inside: nothing to draw
    gl_Position = vec4(2.0, 2.0, 2.0, 1.0);
    return;
  }
  vec3 w = c / d; // eye to centre
  vec3 up = abs(w.y) < 0.99 ? vec3(0.0, 1.0, 0.0) : vec3(1.0, 0.0, 0.0);
  vec3 u = normalize(cross(up, w));
  vec3 v = cross(w, u);
  // the tangent cone (half angle asin(r/d)) cut at distance d - r, with 1% to spare
  float s = 1.01 * (d - r) * r / sqrt(d * d - r * r);
  v_pos = c - w * r + (u * a_corner.x + v * a_corner.y) * s;
  gl_Position = u_proj * vec4(v_pos, 1.0);
}
